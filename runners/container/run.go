package container

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lacuna-dev/lacuna/internal/tailbuf"
)

// Spec is one container run. The zero value of every field but Image and
// Output means "not asked for": the image's entrypoint and command, no
// inputs, no variables, no limits, no GPUs, the image's working directory.
type Spec struct {
	// Image is what runs, always by digest (or image ID for a Local pin).
	Image Pinned
	// Name names the container; Run makes a unique "lacuna-…" name when
	// it is empty.
	Name string
	// Entrypoint replaces the image's entrypoint (one executable);
	// Args replace its command.
	Entrypoint string
	Args       []string
	// Inputs are mounted read-only.
	Inputs []Mount
	// Output is the writable directory of the run's results (required).
	Output Mount
	// Work, when set, is a second writable directory that outlives the
	// run (checkpoints a later run resumes from).
	Work *Mount
	// Env is the whole of what the caller adds to the image's
	// environment; nothing else of the caller's reaches the container.
	Env map[string]string
	// Workdir is the working directory inside the container (absolute).
	Workdir string
	// User runs the process as "uid[:gid]" instead of the image's user
	// (so that a rootful engine's output files belong to the caller).
	User string
	// CPUs bounds CPU time in cores (1.5 = one and a half); Memory bounds
	// memory in bytes. Zero is unbounded.
	CPUs   float64
	Memory int64
	// GPUs selects the host GPUs the container sees (none by default).
	GPUs GPUs
	// Network is the engine's network mode ("none", "host", …); empty is
	// the engine's default.
	Network string
	// Log receives the container's stdout and stderr, and the engine's
	// own messages (pull progress, errors), as they come; nil discards
	// them. Run writes to it from one goroutine at a time.
	Log io.Writer
}

// Mount binds a host path (Source) into the container (Target); both
// absolute.
type Mount struct {
	Source string
	Target string
}

// GPUs selects GPUs: none (the zero value), All, or Devices by index or
// UUID.
type GPUs struct {
	All     bool
	Devices []string
}

// Result describes a run that exited with status 0.
type Result struct {
	Container string
	Image     string
	Elapsed   time.Duration
}

// ExitError is a run that exited with a non-zero status. Podman and docker
// use 125–127 for their own failures (an image that cannot be pulled, a
// command that cannot run); Output then says why.
type ExitError struct {
	Container string
	Image     string
	Code      int
	// Output is the end of what the run wrote (at most 2 KiB).
	Output string
}

func (e *ExitError) Error() string {
	msg := fmt.Sprintf("container %s (image %s) exited with status %d", e.Container, e.Image, e.Code)
	if last := lastLine(e.Output); last != "" {
		msg += ": " + last
	}
	return msg
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimSpace(s)
}

var (
	envName       = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	containerName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)
)

// RunArgs is the argument vector Run executes for spec (after the client's
// executable): the engine's global arguments, then `run` with spec's
// options, the image by digest and its arguments. It is a pure function of
// the engine and spec, and spec.Name must be set.
func (e *Engine) RunArgs(spec Spec) ([]string, error) {
	return e.runArgs(spec, true)
}

// runArgs is RunArgs; withOutput says whether spec must have its output
// directory (a server's container has none: ServerArgs).
func (e *Engine) runArgs(spec Spec, withOutput bool) ([]string, error) {
	if e == nil || (e.kind != Podman && e.kind != Docker) {
		return nil, errors.New("container: engine not set up (use NewEngine)")
	}
	if err := spec.validate(withOutput); err != nil {
		return nil, err
	}
	a := append([]string{}, e.args...)
	a = append(a, "run", "--rm", "--name", spec.Name, "--pull=missing")
	if e.kind == Podman {
		// containers.conf may turn env_host on; the run's environment is
		// the Spec's alone.
		a = append(a, "--env-host=false")
		if spec.Image.Insecure && !spec.Image.Local {
			a = append(a, "--tls-verify=false")
		}
	}
	if spec.Network != "" {
		a = append(a, "--network="+spec.Network)
	}
	if spec.User != "" {
		a = append(a, "--user="+spec.User)
	}
	if spec.CPUs > 0 {
		a = append(a, "--cpus="+strconv.FormatFloat(spec.CPUs, 'f', -1, 64))
	}
	if spec.Memory > 0 {
		a = append(a, "--memory="+strconv.FormatInt(spec.Memory, 10))
	}
	a = append(a, gpuArgs(e.kind, spec.GPUs)...)
	if spec.Workdir != "" {
		a = append(a, "--workdir="+spec.Workdir)
	}
	for _, m := range spec.Inputs {
		a = append(a, "--mount", "type=bind,source="+m.Source+",target="+m.Target+",readonly")
	}
	if spec.Output.Source != "" {
		a = append(a, "--mount", "type=bind,source="+spec.Output.Source+",target="+spec.Output.Target)
	}
	if spec.Work != nil {
		a = append(a, "--mount", "type=bind,source="+spec.Work.Source+",target="+spec.Work.Target)
	}
	names := make([]string, 0, len(spec.Env))
	for k := range spec.Env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		// Always NAME=VALUE: a bare NAME would copy the engine's own
		// variable into the container.
		a = append(a, "--env", k+"="+spec.Env[k])
	}
	if spec.Entrypoint != "" {
		a = append(a, "--entrypoint", spec.Entrypoint)
	}
	a = append(a, spec.Image.String())
	return append(a, spec.Args...), nil
}

func gpuArgs(k Kind, g GPUs) []string {
	switch {
	case k == Podman && g.All:
		return []string{"--device", "nvidia.com/gpu=all"}
	case k == Podman:
		var a []string
		for _, d := range g.Devices {
			a = append(a, "--device", "nvidia.com/gpu="+d)
		}
		return a
	case g.All:
		return []string{"--gpus", "all"}
	case len(g.Devices) > 0:
		// docker parses --gpus as CSV: a list of devices is one quoted
		// field.
		return []string{"--gpus", `"device=` + strings.Join(g.Devices, ",") + `"`}
	}
	return nil
}

func (s Spec) validate(withOutput bool) error {
	if s.Image.Digest == "" {
		return errors.New("container: spec has no pinned image")
	}
	if !s.Image.Local && s.Image.Repo == "" {
		return fmt.Errorf("container: image %s has no repository", s.Image.Digest)
	}
	if !containerName.MatchString(s.Name) {
		return fmt.Errorf("container: bad container name %q", s.Name)
	}
	if withOutput && s.Output.Source == "" {
		return errors.New("container: spec has no output directory")
	}
	if !withOutput && (s.Output != Mount{} || s.Work != nil) {
		return errors.New("container: a server's container has no output or work directory")
	}
	targets := map[string]bool{}
	all := append([]Mount{}, s.Inputs...)
	if withOutput {
		all = append(all, s.Output)
	}
	if s.Work != nil {
		all = append(all, *s.Work)
	}
	for _, m := range all {
		for _, p := range []string{m.Source, m.Target} {
			if !path.IsAbs(p) {
				return fmt.Errorf("container: mount path %q is not absolute", p)
			}
			if strings.ContainsAny(p, ",\n") {
				return fmt.Errorf("container: mount path %q holds a comma or newline", p)
			}
		}
		t := path.Clean(m.Target)
		if targets[t] {
			return fmt.Errorf("container: two mounts at %s", t)
		}
		targets[t] = true
	}
	for k := range s.Env {
		if !envName.MatchString(k) {
			return fmt.Errorf("container: bad environment variable name %q", k)
		}
	}
	if s.Workdir != "" && !path.IsAbs(s.Workdir) {
		return fmt.Errorf("container: workdir %q is not absolute", s.Workdir)
	}
	if s.CPUs < 0 || s.Memory < 0 {
		return errors.New("container: negative resource limit")
	}
	if s.GPUs.All && len(s.GPUs.Devices) > 0 {
		return errors.New("container: GPUs: both All and Devices")
	}
	for _, d := range s.GPUs.Devices {
		if d == "" || strings.ContainsAny(d, ",\" ") {
			return fmt.Errorf("container: bad GPU device %q", d)
		}
	}
	return nil
}

// Run runs spec to completion (see the package comment). A cancelled ctx
// kills the engine's client and then force-removes the container, so that
// nothing of the run survives Run's return; the error then wraps
// ctx.Err().
func (e *Engine) Run(ctx context.Context, spec Spec) (Result, error) {
	if spec.Name == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		spec.Name = "lacuna-" + hex.EncodeToString(b[:])
	}
	args, err := e.RunArgs(spec)
	if err != nil {
		return Result{}, err
	}
	res := Result{Container: spec.Name, Image: spec.Image.String()}
	tail := tailbuf.New(2048)
	log := spec.Log
	if log == nil {
		log = io.Discard
	}
	out := io.MultiWriter(log, tail)
	cmd := exec.Command(e.path, args...)
	cmd.Stdout, cmd.Stderr = out, out
	// A client that does not exit after its container is gone (a pull
	// cut off mid-stream) is not waited for forever.
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("container %s (image %s): %w", res.Container, res.Image, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		// Kill the client first, so that it cannot create the container
		// after the removal (it may still be pulling); then remove the
		// container, which conmon or the daemon keeps running without it.
		_ = cmd.Process.Kill()
		<-done
		rmErr := e.remove(spec.Name)
		return res, errors.Join(fmt.Errorf("container %s (image %s): %w", res.Container, res.Image, ctx.Err()), rmErr)
	}
	res.Elapsed = time.Since(start)
	var xerr *exec.ExitError
	if errors.As(err, &xerr) && xerr.ExitCode() > 0 {
		return res, &ExitError{Container: res.Container, Image: res.Image, Code: xerr.ExitCode(), Output: tail.String()}
	}
	if err != nil {
		return res, fmt.Errorf("container %s (image %s): %w", res.Container, res.Image, err)
	}
	return res, nil
}

// remove force-removes a container, if it exists, on a context of its own
// (the run's is cancelled).
func (e *Engine) remove(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := e.output(ctx, removeArgs(e.kind, name)...)
	if err != nil && e.kind == Docker && strings.Contains(err.Error(), "No such container") {
		return nil
	}
	return err
}

// removeArgs are the arguments (after the global ones) that kill and
// remove container name at once, and succeed when it does not exist
// (podman; docker says "No such container", which callers forgive).
func removeArgs(k Kind, name string) []string {
	args := []string{"rm", "--force"}
	if k == Podman {
		args = append(args, "--ignore", "--time=0")
	}
	return append(args, name)
}
