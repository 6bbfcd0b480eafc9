// Package gotool drives the go command: a Toolchain with its caches under
// the store, batched `go test -json` runs of many generated programs
// compiled together and executed through a sandbox wrapper (RunBatch), or
// compiled together and then run one process each, so that none can
// change another's verdict (BuildBatch, Built.Run), and the validation of
// standalone examples. Its Options carry the environment the go command
// runs with; it reads none from the process.
package gotool
