package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// goTool is the environment a test gives the go command: nothing of its
// own but the shared build cache (so the standard library is not rebuilt).
func goTool(t *testing.T) (goPath string, env []string) {
	t.Helper()
	goPath, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("the go command is needed: ", err)
	}
	cache, err := exec.Command(goPath, "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	return goPath, []string{"PATH=" + filepath.Dir(goPath) + ":/usr/bin:/bin", "HOME=" + home,
		"GOCACHE=" + strings.TrimSpace(string(cache)), "GOPATH=" + filepath.Join(home, "gopath"),
		"GOMODCACHE=" + filepath.Join(home, "mod"), "GOTOOLCHAIN=local", "GOWORK=off", "GOFLAGS=-modcacherw"}
}

func writeModule(t *testing.T, dir, main string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/m\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRunToolBuildsAProgramWithoutCgoThatRunsInTheSandbox(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Go program")
	}
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	goPath, env := goTool(t)
	src, bin := t.TempDir(), workDir(t)
	writeModule(t, src, "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"built under limits\") }\n")
	lim := Limits{Wall: 5 * time.Minute, Memory: 2 << 30}
	r, err := s.RunTool(context.Background(), Tool{Argv: []string{goPath, "env", "CGO_ENABLED"}, Dir: src, Env: env, Limits: lim})
	if err != nil || strings.TrimSpace(string(r.Stdout)) != "0" {
		t.Fatalf("cgo under RunTool: %q %v", r.Stdout, err)
	}
	r, err = s.RunTool(context.Background(), Tool{Argv: []string{goPath, "build", "-o", filepath.Join(bin, "prog"), "."}, Dir: src, Env: env, Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitCode != 0 || r.TimedOut {
		t.Fatalf("go build: %+v\n%s", r, r.Stderr)
	}
	r, err = s.Run(context.Background(), Spec{Argv: []string{"./prog"}, Dir: bin, Limits: Limits{Wall: 30 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Stdout) != "built under limits\n" || r.ExitCode != 0 {
		t.Errorf("the built program: %+v (stdout %q stderr %q)", r, r.Stdout, r.Stderr)
	}
}

func TestRunToolStopsACompileBombAtItsMemoryLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the Go compiler")
	}
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	goPath, env := goTool(t)
	// c30 is a 16 GiB string constant: unbounded, the compiler takes
	// about 20 GB and minutes before the kernel kills it.
	var b strings.Builder
	b.WriteString("package main\n\nconst c0 = \"xxxxxxxxxxxxxxxx\"\n")
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&b, "const c%d = c%d + c%d\n", i, i-1, i-1)
	}
	b.WriteString("var s = c30\n\nfunc main() { println(len(s)) }\n")
	src := t.TempDir()
	writeModule(t, src, b.String())
	r, err := s.RunTool(context.Background(), Tool{Argv: []string{goPath, "build", "-o", filepath.Join(src, "bomb"), "."}, Dir: src, Env: env, Limits: Limits{Wall: 2 * time.Minute, Memory: 1 << 30}})
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitCode == 0 || r.TimedOut || !strings.Contains(string(r.Stderr), "out of memory") {
		t.Errorf("compile bomb under a 1 GiB limit: %+v\n%.2000s", r, r.Stderr)
	}
}
