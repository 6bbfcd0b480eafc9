package slurm_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lacuna-dev/lacuna/runners/slurm"
)

// A sweep of three instances as one job array, at most two at a time,
// each with a GPU for an hour. Run again after an interruption (SIGINT,
// kill -9), the same call runs only what did not complete.
func Example() {
	r, err := slurm.New("/shared/lacuna/slurm", slurm.WithPollInterval(5*time.Second, time.Minute))
	if err != nil {
		panic(err)
	}
	job := slurm.Job{
		Name:    "train-sft-3b",
		Command: `python train.py --config "configs/$LACUNA_INSTANCE.yaml"`,
		Instances: []slurm.Instance{
			{Name: "lr-1e-4"}, {Name: "lr-3e-4"}, {Name: "lr-1e-3"},
		},
		Resources: slurm.Resources{CPUs: 8, MemoryMB: 64 << 10, GPUs: 1, Time: time.Hour, Partition: "gpu"},
		Limit:     2,
	}
	res, err := r.Submit(context.Background(), job)
	var failed *slurm.FailedError
	switch {
	case errors.As(err, &failed):
		for _, f := range failed.Failed {
			fmt.Println(f.Name, f.State, f.ExitCode, f.Stderr)
		}
	case err != nil:
		panic(err)
	default:
		fmt.Println(res.Submitted, "submitted,", res.Reused, "already complete")
	}
}
