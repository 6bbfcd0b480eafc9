package container

import (
	"strings"
	"testing"
)

func TestRunArgsForBothEngines(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	reg := Pinned{Ref: "127.0.0.1:5000/tool:v1", Repo: "127.0.0.1:5000/tool", Digest: digest}
	insecure := reg
	insecure.Insecure = true
	local := Pinned{Ref: "tool:dev", Digest: digest, Local: true}
	localInsecure := local
	localInsecure.Insecure = true
	out := Mount{Source: "/host/out", Target: "/out"}
	podman := &Engine{kind: Podman, path: "/usr/bin/podman", args: []string{"--runtime=runc"}}
	docker := &Engine{kind: Docker, path: "/usr/bin/docker"}
	full := Spec{
		Image:      reg,
		Name:       "job1",
		Entrypoint: "/bin/train",
		Args:       []string{"--epochs", "3"},
		Inputs:     []Mount{{Source: "/host/a", Target: "/in/a"}, {Source: "/host/b", Target: "/in/b"}},
		Output:     out,
		Env:        map[string]string{"ZED": "1", "HF_HOME": "/out/hf", "EMPTY": ""},
		Workdir:    "/work",
		User:       "1000:1000",
		CPUs:       1.5,
		Memory:     2 << 30,
		GPUs:       GPUs{All: true},
		Network:    "none",
	}
	withGPUs := func(s Spec, g GPUs) Spec { s.GPUs = g; return s }
	minimal := Spec{Image: reg, Name: "m", Output: out}
	withImage := func(s Spec, p Pinned) Spec { s.Image = p; return s }

	cases := []struct {
		name string
		eng  *Engine
		spec Spec
		want string
	}{
		{"podman minimal", podman, minimal,
			"--runtime=runc run --rm --name m --pull=missing --env-host=false --mount type=bind,source=/host/out,target=/out 127.0.0.1:5000/tool@" + digest},
		{"docker minimal", docker, minimal,
			"run --rm --name m --pull=missing --mount type=bind,source=/host/out,target=/out 127.0.0.1:5000/tool@" + digest},
		{"podman full", podman, full,
			"--runtime=runc run --rm --name job1 --pull=missing --env-host=false --network=none --user=1000:1000 --cpus=1.5 --memory=2147483648 " +
				"--device nvidia.com/gpu=all --workdir=/work " +
				"--mount type=bind,source=/host/a,target=/in/a,readonly --mount type=bind,source=/host/b,target=/in/b,readonly " +
				"--mount type=bind,source=/host/out,target=/out " +
				"--env EMPTY= --env HF_HOME=/out/hf --env ZED=1 --entrypoint /bin/train 127.0.0.1:5000/tool@" + digest + " --epochs 3"},
		{"docker full", docker, full,
			"run --rm --name job1 --pull=missing --network=none --user=1000:1000 --cpus=1.5 --memory=2147483648 " +
				"--gpus all --workdir=/work " +
				"--mount type=bind,source=/host/a,target=/in/a,readonly --mount type=bind,source=/host/b,target=/in/b,readonly " +
				"--mount type=bind,source=/host/out,target=/out " +
				"--env EMPTY= --env HF_HOME=/out/hf --env ZED=1 --entrypoint /bin/train 127.0.0.1:5000/tool@" + digest + " --epochs 3"},
		{"podman some GPUs", podman, withGPUs(minimal, GPUs{Devices: []string{"0", "2"}}),
			"--runtime=runc run --rm --name m --pull=missing --env-host=false --device nvidia.com/gpu=0 --device nvidia.com/gpu=2 --mount type=bind,source=/host/out,target=/out 127.0.0.1:5000/tool@" + digest},
		{"docker some GPUs", docker, withGPUs(minimal, GPUs{Devices: []string{"0", "2"}}),
			`run --rm --name m --pull=missing --gpus "device=0,2" --mount type=bind,source=/host/out,target=/out 127.0.0.1:5000/tool@` + digest},
		{"docker one GPU by UUID", docker, withGPUs(minimal, GPUs{Devices: []string{"GPU-3a2b"}}),
			`run --rm --name m --pull=missing --gpus "device=GPU-3a2b" --mount type=bind,source=/host/out,target=/out 127.0.0.1:5000/tool@` + digest},
		{"podman insecure loopback pull", podman, withImage(minimal, insecure),
			"--runtime=runc run --rm --name m --pull=missing --env-host=false --tls-verify=false --mount type=bind,source=/host/out,target=/out 127.0.0.1:5000/tool@" + digest},
		{"docker insecure: the daemon decides", docker, withImage(minimal, insecure),
			"run --rm --name m --pull=missing --mount type=bind,source=/host/out,target=/out 127.0.0.1:5000/tool@" + digest},
		{"podman local image by ID", podman, withImage(minimal, localInsecure),
			"--runtime=runc run --rm --name m --pull=missing --env-host=false --mount type=bind,source=/host/out,target=/out " + digest},
		{"docker local image by ID", docker, withImage(minimal, local),
			"run --rm --name m --pull=missing --mount type=bind,source=/host/out,target=/out " + digest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.eng.RunArgs(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			if g := strings.Join(got, " "); g != c.want {
				t.Errorf("args\n got %s\nwant %s", g, c.want)
			}
		})
	}
}

func TestRunArgsRefusesBadSpecs(t *testing.T) {
	digest := "sha256:" + strings.Repeat("cd", 32)
	ok := Spec{
		Image:  Pinned{Repo: "r.example/tool", Digest: digest},
		Name:   "n",
		Output: Mount{Source: "/o", Target: "/out"},
	}
	eng := &Engine{kind: Podman, path: "podman"}
	cases := []struct {
		name   string
		change func(*Spec)
		want   string
	}{
		{"unpinned image", func(s *Spec) { s.Image = Pinned{Ref: "tool:latest"} }, "no pinned image"},
		{"digest without repository", func(s *Spec) { s.Image.Repo = "" }, "no repository"},
		{"no output", func(s *Spec) { s.Output = Mount{} }, "no output directory"},
		{"no name", func(s *Spec) { s.Name = "" }, "bad container name"},
		{"relative source", func(s *Spec) { s.Inputs = []Mount{{Source: "data", Target: "/in"}} }, "not absolute"},
		{"relative target", func(s *Spec) { s.Output.Target = "out" }, "not absolute"},
		{"comma in path", func(s *Spec) { s.Inputs = []Mount{{Source: "/a,readonly=false", Target: "/in"}} }, "comma"},
		{"input over the output", func(s *Spec) { s.Inputs = []Mount{{Source: "/i", Target: "/out/"}} }, "two mounts at /out"},
		{"env name with =", func(s *Spec) { s.Env = map[string]string{"A=B": "c"} }, "bad environment variable"},
		{"env glob", func(s *Spec) { s.Env = map[string]string{"AWS_*": ""} }, "bad environment variable"},
		{"relative workdir", func(s *Spec) { s.Workdir = "w" }, "workdir"},
		{"negative memory", func(s *Spec) { s.Memory = -1 }, "negative"},
		{"all and some GPUs", func(s *Spec) { s.GPUs = GPUs{All: true, Devices: []string{"0"}} }, "both All and Devices"},
		{"GPU list in one device", func(s *Spec) { s.GPUs = GPUs{Devices: []string{"0,1"}} }, "bad GPU device"},
	}
	if _, err := eng.RunArgs(ok); err != nil {
		t.Fatalf("the base spec is refused: %v", err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := ok
			c.change(&s)
			_, err := eng.RunArgs(s)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want one saying %q", err, c.want)
			}
		})
	}
	if _, err := (&Engine{}).RunArgs(ok); err == nil {
		t.Error("a zero Engine built arguments")
	}
}

func TestEngineKindFromName(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"podman", "docker", "nerdctl"} {
		writeExecutable(t, dir+"/"+n, "#!/bin/sh\n")
	}
	cases := []struct {
		name string
		opts []EngineOption
		want Kind
		err  string
	}{
		{dir + "/podman", nil, Podman, ""},
		{dir + "/docker", nil, Docker, ""},
		{dir + "/nerdctl", nil, "", "cannot tell"},
		{dir + "/nerdctl", []EngineOption{WithKind(Docker)}, Docker, ""},
		{dir + "/absent", nil, "", "absent"},
	}
	for _, c := range cases {
		e, err := NewEngine(c.name, c.opts...)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("NewEngine(%s): err = %v, want %q", c.name, err, c.err)
			}
		case err != nil:
			t.Errorf("NewEngine(%s): %v", c.name, err)
		case e.Kind() != c.want || e.Path() != c.name:
			t.Errorf("NewEngine(%s) = %s at %s, want %s", c.name, e.Kind(), e.Path(), c.want)
		}
	}
}

func TestMovedSaysWhichTagMoved(t *testing.T) {
	a := "sha256:" + strings.Repeat("aa", 32)
	b := "sha256:" + strings.Repeat("bb", 32)
	pa := Pinned{Ref: "r.example/tool:v1", Repo: "r.example/tool", Digest: a}
	pb := pa
	pb.Digest = b
	local := Pinned{Ref: "r.example/tool:v1", Digest: a, Local: true}
	other := Pinned{Ref: "r.example/tool:v2", Repo: "r.example/tool", Digest: b}
	cases := []struct {
		name      string
		prev, cur Pinned
		want      string
	}{
		{"same content", pa, pa, ""},
		{"moved", pa, pb, "tag r.example/tool:v1 moved from " + a + " to " + b},
		{"from the registry to a local image", pa, local, "tag r.example/tool:v1 moved from " + a + " to local image " + a},
		{"another reference", pa, other, ""},
	}
	for _, c := range cases {
		msg, moved := Moved(c.prev, c.cur)
		if msg != c.want || moved != (c.want != "") {
			t.Errorf("%s: Moved = %q, %v; want %q", c.name, msg, moved, c.want)
		}
	}
}

func TestServerWrapRunsByDigestWithoutOutput(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	reg := Pinned{Ref: "127.0.0.1:5000/llama:v1", Repo: "127.0.0.1:5000/llama", Digest: digest, Insecure: true}
	podman := &Engine{kind: Podman, path: "/usr/bin/podman", args: []string{"--runtime=runc"}}
	docker := &Engine{kind: Docker, path: "/usr/bin/docker"}
	spec := Spec{
		Image:  reg,
		Inputs: []Mount{{Source: "/models/smol.gguf", Target: "/lacuna/weights/smol.gguf"}},
		Env:    map[string]string{"LLAMA_ARG_THREADS": "2"},
		CPUs:   2,
		Memory: 1 << 30,
		GPUs:   GPUs{Devices: []string{"0"}},
	}
	args := []string{"-m", "/lacuna/weights/smol.gguf", "--host", "127.0.0.1", "--port", "8080"}
	cases := []struct {
		name        string
		srv         Server
		command     []string
		run, remove string
	}{
		{"podman, the image's entrypoint", Server{Engine: podman, Spec: spec}, nil,
			"/usr/bin/podman --runtime=runc run --rm --name srv1 --pull=missing --env-host=false --tls-verify=false --network=host --cpus=2 --memory=1073741824 " +
				"--device nvidia.com/gpu=0 --mount type=bind,source=/models/smol.gguf,target=/lacuna/weights/smol.gguf,readonly --env LLAMA_ARG_THREADS=2 " +
				"127.0.0.1:5000/llama@" + digest + " -m /lacuna/weights/smol.gguf --host 127.0.0.1 --port 8080",
			"/usr/bin/podman --runtime=runc rm --force --ignore --time=0 srv1"},
		{"docker, a command in the image", Server{Engine: docker, Spec: spec}, []string{"/app/llama-server", "-t", "2"},
			"/usr/bin/docker run --rm --name srv1 --pull=missing --network=host --cpus=2 --memory=1073741824 " +
				`--gpus "device=0" --mount type=bind,source=/models/smol.gguf,target=/lacuna/weights/smol.gguf,readonly --env LLAMA_ARG_THREADS=2 ` +
				"--entrypoint /app/llama-server 127.0.0.1:5000/llama@" + digest + " -t 2 -m /lacuna/weights/smol.gguf --host 127.0.0.1 --port 8080",
			"/usr/bin/docker rm --force srv1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run, remove, err := c.srv.Wrap("srv1", c.command, args)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(run, " "); got != c.run {
				t.Errorf("run:\n got %s\nwant %s", got, c.run)
			}
			if got := strings.Join(remove, " "); got != c.remove {
				t.Errorf("remove:\n got %s\nwant %s", got, c.remove)
			}
		})
	}
	withOutput := spec
	withOutput.Output = Mount{Source: "/tmp/out", Target: "/out"}
	for _, bad := range []struct {
		name string
		srv  Server
		cmd  []string
		n    string
	}{
		{"no engine", Server{Spec: spec}, nil, "srv1"},
		{"an output directory", Server{Engine: podman, Spec: withOutput}, nil, "srv1"},
		{"a bad name", Server{Engine: podman, Spec: spec}, nil, "no spaces"},
		{"an empty executable", Server{Engine: podman, Spec: spec}, []string{""}, "srv1"},
	} {
		if _, _, err := bad.srv.Wrap(bad.n, bad.cmd, args); err == nil {
			t.Errorf("%s: no error", bad.name)
		}
	}
}
