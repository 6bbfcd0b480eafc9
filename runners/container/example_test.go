package container_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/lacuna-dev/lacuna/runners/container"
)

// A node pins its image once, keys on the pin and runs that same pin.
func Example() {
	ctx := context.Background()
	eng, err := container.NewEngine("", container.WithArgs("--runtime=runc"))
	if err != nil {
		fmt.Println(err)
		return
	}
	pin, err := container.Resolve(ctx, "ghcr.io/example/trainer:v1", container.WithLocal(eng))
	if err != nil {
		fmt.Println(err)
		return
	}
	// pin.String() goes into the action key; a previous pin of the same
	// tag tells the plan whether it moved.
	_, err = eng.Run(ctx, container.Spec{
		Image:  pin,
		Args:   []string{"--epochs", "1"},
		Inputs: []container.Mount{{Source: "/store/cas/ab12", Target: "/data"}},
		Output: container.Mount{Source: "/store/tmp/out-1", Target: "/out"},
		Env:    map[string]string{"HF_HOME": "/out/hf"},
		GPUs:   container.GPUs{All: true},
		Log:    os.Stderr,
	})
	fmt.Println(err)
}

func ExampleEngine_RunArgs() {
	// A client's path decides its flavour; nothing is run here.
	dir, _ := os.MkdirTemp("", "")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(dir+"/docker", []byte("#!/bin/sh\n"), 0o755)
	eng, _ := container.NewEngine(dir + "/docker")
	args, _ := eng.RunArgs(container.Spec{
		Image:  container.Pinned{Repo: "r.example/tool", Digest: "sha256:" + strings.Repeat("0", 64)},
		Name:   "job-1",
		Output: container.Mount{Source: "/tmp/out", Target: "/out"},
		Env:    map[string]string{"SEED": "1"},
		GPUs:   container.GPUs{Devices: []string{"0", "1"}},
		Memory: 8 << 30,
	})
	fmt.Println(strings.Join(args, " "))
	// Output:
	// run --rm --name job-1 --pull=missing --memory=8589934592 --gpus "device=0,1" --mount type=bind,source=/tmp/out,target=/out --env SEED=1 r.example/tool@sha256:0000000000000000000000000000000000000000000000000000000000000000
}
