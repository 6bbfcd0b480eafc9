package pyenv_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/lacuna-dev/lacuna/runners/pyenv"
)

// The environment of pydantic 2.5.0 with the dependencies of its release
// day, made with uv (or pip when uv cannot be had).
func Example() {
	ctx := context.Background()
	opt := pyenv.Options{Environ: os.Environ()}
	py, err := pyenv.FindPython(ctx, "python3", opt)
	if err != nil {
		panic(err)
	}
	dir := "/var/cache/lacuna/python"
	inst, fallback, err := pyenv.NewInstaller(ctx, dir, "", py, opt)
	if err != nil {
		panic(err)
	}
	if fallback != nil {
		fmt.Println("using pip:", fallback)
	}
	cache := &pyenv.Cache{Dir: dir, Python: py, Installer: inst}
	released := time.Date(2023, 11, 13, 17, 17, 45, 0, time.UTC)
	lock, err := cache.Resolve(ctx, pyenv.Spec{Name: "pydantic", Version: "2.5.0", ExcludeNewer: pyenv.ExcludeNewerFor(released)})
	if err != nil {
		panic(err)
	}
	fmt.Println("identity:", lock.Digest()) // what a node puts in its key
	env, err := cache.Install(ctx, lock, "")
	if err != nil {
		panic(err)
	}
	out, _ := exec.Command(env.Python(), "-c", "import pydantic; print(pydantic.VERSION)").Output()
	fmt.Printf("%s", out)
}
