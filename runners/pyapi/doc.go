// Package pyapi analyses an installed Python package: its public API
// surface (functions, classes, methods, properties with signatures,
// docstrings, source locations and deprecation markers), the diff of two
// surfaces reconciled on object identity (re-exports and moves with an
// alias are not novel; canonical-path drift is recorded), and the
// per-parameter descriptions of numpydoc, Google and Sphinx docstrings.
//
// For the knowledge bundle it gives S (Signature: parameters with types,
// defaults and docstring descriptions, the result), M_prose's doc tier
// (Prose), M_code (SourceCode, APICode: the syntax tree's source, docstrings
// stripped, the same-module unexported helpers inlined, by goapi.Code's
// rule), E (Doctests and DocFileExamples: doctests, and fenced Python
// blocks with the output they state in "#> " lines or pytest-examples'
// multi-line strings (Example.Origin), run one by one in the sandbox by
// an Executor, kept when they pass; Verdict.Compared counts the steps
// whose output was checked, so an example that only ran without an
// error is told from an output-checked one) and the licence from the
// package metadata (ReadLicense, LicenseFromMetadata: SPDX, copyleft
// flagged).
//
// The surface is read by an embedded stdlib-only helper (surface.py) run
// as a subprocess of a given interpreter: the library's modules are
// imported there, never in lacuna's process, so an import-time crash, exit
// or hang of the library becomes a reason on a module, not a failure of
// lacuna; M_code and the examples are read by two more embedded helpers
// (code.py parses, never imports; examples.py parses, or runs one example
// inside the sandbox). The package knows nothing of environments or the
// graph: it is given an interpreter and the directories to put on
// sys.path.
package pyapi
