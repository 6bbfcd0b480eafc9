// Package pyapi analyses an installed Python package: its public API
// surface (functions, classes, methods, properties with signatures,
// docstrings, source locations and deprecation markers), the diff of two
// surfaces reconciled on object identity (re-exports and moves with an
// alias are not novel; canonical-path drift is recorded), and the
// per-parameter descriptions of numpydoc, Google and Sphinx docstrings.
//
// The surface is read by an embedded stdlib-only helper (surface.py) run
// as a subprocess of a given interpreter: the library's modules are
// imported there, never in lacuna's process, so an import-time crash, exit
// or hang of the library becomes a reason on a module, not a failure of
// lacuna. The package knows nothing of environments or the graph: it is
// given an interpreter and the directories to put on sys.path.
package pyapi
