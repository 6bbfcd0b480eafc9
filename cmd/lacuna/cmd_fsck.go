package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
)

var cmdFsck = newCommand("fsck", "[--store DIR]",
	"verify every object in the store; quarantine corrupt ones", `
Fsck reads every object, action entry, blob and call of the call cache of
the store and checks its digest or checksum. Corrupt objects, blobs,
damaged action entries and corrupt calls are moved to quarantine/, and
action entries whose output is gone, or one of whose blobs (listed in the
entry or named by its rows) is missing or corrupt, are removed (unless
--dry-run), so the next run recomputes them or makes the call again; a
blob the rows name that the entry does not list is added to it, so gc
keeps it. Every pipeline's snapshot is then distrusted, so plan and run
look the actions up again. It exits 1 when it found a problem.`)

var fsckFlags struct {
	storeFlag
	jsonFlag
	dryRun bool
}

func init() {
	fsckFlags.storeFlag.add(cmdFsck.Flag, "./.lacuna")
	fsckFlags.jsonFlag.add(cmdFsck.Flag)
	cmdFsck.Flag.BoolVar(&fsckFlags.dryRun, "dry-run", false, "report only; do not quarantine or remove anything")
	cmdFsck.Run = runFsck
}

func runFsck(ctx context.Context, cmd *Command, args []string) error {
	if len(args) > 0 {
		return usageError("usage: lacuna fsck [--store DIR]")
	}
	st, err := fsckFlags.openHere()
	if err != nil {
		return err
	}
	rep, err := st.Fsck(ctx, !fsckFlags.dryRun)
	if err != nil {
		return err
	}
	if fsckFlags.json {
		if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
			return err
		}
	} else {
		bad := 0
		for _, p := range rep.Problems {
			if p.Kind == "corrupt-call" {
				bad++
			}
		}
		fmt.Printf("checked %d objects, %d actions, %d blobs, %d calls in %s\n", rep.Objects, rep.Actions, rep.Blobs, rep.Calls+bad, st.Root())
		for _, p := range rep.Problems {
			fixed := ""
			if p.Fixed != "" {
				fixed = " (" + p.Fixed + ")"
			}
			fmt.Printf("%s %s: %s%s\n", p.Kind, p.Name, p.Detail, fixed)
		}
		if len(rep.Problems) == 0 {
			fmt.Println("no problems found")
		}
	}
	if len(rep.Problems) > 0 {
		return exitError(1)
	}
	return nil
}
