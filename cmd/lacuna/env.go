package main

import "time"

// environment is everything lacuna reads from its process environment.
// It is read once, in main, before any command runs; nothing else in
// lacuna calls os.Getenv for its own settings (library packages take
// these values as options).
type environment struct {
	// store is LACUNA_STORE: the store directory when --store is not given.
	store string
	// syncEach is LACUNA_FSYNC=always (or 1): fsync every object and
	// action entry as it is committed, not once per run.
	syncEach bool
	// cpuProfile and memProfile are LACUNA_CPUPROFILE and
	// LACUNA_MEMPROFILE: where to write pprof profiles of lacuna itself.
	cpuProfile, memProfile string
	// gogcSet and memLimitSet say whether GOGC and GOMEMLIMIT are set;
	// lacuna then leaves the garbage collector's settings to them.
	gogcSet, memLimitSet bool
	// dumbTerminal is TERM=dumb: no live progress display.
	dumbTerminal bool
	// slurmPoll is LACUNA_SLURM_POLL: the shortest interval between two
	// polls of a SLURM runner's jobs (default 2s; it grows while nothing
	// changes).
	slurmPoll time.Duration
}

// nodeEnviron is the whole environment, handed to node types through
// nodes.Resolve (engine.Executor.Environ): what a node reads there
// (GOPROXY, GOFLAGS, LACUNA_GOCACHE, ...) it pins in its identity. Set by
// main with env.
var nodeEnviron []string

// env is the environment of this process, set by main.
var env environment

func readEnvironment(getenv func(string) string) environment {
	fsync := getenv("LACUNA_FSYNC")
	poll, _ := time.ParseDuration(getenv("LACUNA_SLURM_POLL"))
	return environment{
		slurmPoll:    poll,
		store:        getenv("LACUNA_STORE"),
		syncEach:     fsync == "always" || fsync == "1",
		cpuProfile:   getenv("LACUNA_CPUPROFILE"),
		memProfile:   getenv("LACUNA_MEMPROFILE"),
		gogcSet:      getenv("GOGC") != "",
		memLimitSet:  getenv("GOMEMLIMIT") != "",
		dumbTerminal: getenv("TERM") == "dumb",
	}
}
