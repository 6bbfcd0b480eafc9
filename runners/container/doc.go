// Package container runs work in OCI containers whose images are pinned by
// digest. It knows nothing of the pipeline graph: a node resolves its image
// once (Resolve), puts the pin's String into its action key, and hands the
// same Pinned value to a Runner, so a key never describes an image that did
// not run (BuildKit's resolve-once).
//
// # Pinning
//
// Resolve turns a reference into a Pinned value:
//
//   - a reference that already carries a digest (name@sha256:…) is pinned
//     as it is, without asking anyone;
//   - a tag is resolved through the registry API (a HEAD of its manifest,
//     a GET where HEAD is refused) to the digest of what it names now: a
//     manifest or, for a multi-platform image, the index;
//   - when no registry answers for it (a local-only image: built or loaded
//     into the engine, never pushed), the engine's image ID is taken, if
//     Resolve was given the engine (WithLocal). Such a pin is Local: its
//     String is the bare image ID, which only that engine's store can run.
//
// A registry is reached anonymously unless WithKeychain says how to
// authenticate (cmd/lacuna passes authn.DefaultKeychain; this package
// reads no configuration of its own). go-containerregistry itself speaks
// plain HTTP to registries on loopback and private addresses after HTTPS
// fails; InsecureLoopback also makes the engine pull such an image without
// TLS verification (podman's --tls-verify=false), and only for loopback
// hosts.
//
// Moved compares a previous pin of a reference with a new one and says
// "tag X moved from A to B" when the content it names changed: the change
// a plan reports, since every key that ran in the image changes with it.
//
// # Running
//
// An Engine is a podman or docker command-line client (NewEngine finds
// one on PATH or takes the one named) with optional global arguments
// (WithArgs: podman on some hosts needs --runtime=runc). Run runs one Spec
// to completion:
//
//   - always by digest (or by image ID for a Local pin), pulling it when
//     missing;
//   - with the declared inputs mounted read-only and exactly one writable
//     output directory;
//   - with only the declared environment variables plus what the image
//     and the engine define (PATH, HOSTNAME, …): nothing of lacuna's own
//     environment reaches the container;
//   - under the declared limits (CPUs, memory, GPUs: CDI devices
//     nvidia.com/gpu=… for podman, --gpus for docker);
//   - with its stdout and stderr (and the engine's pull progress) streamed
//     into Spec.Log as they come;
//   - with a non-zero exit status returned as an *ExitError naming the
//     container, the image and the status;
//   - removed when it ends (--rm), and killed and removed when ctx is
//     cancelled, before Run returns.
//
// RunArgs is the argument vector Run executes, a pure function of the
// engine and the Spec.
//
// # Concurrency
//
// An Engine is immutable once made and safe for concurrent use; each Run
// names its own container. Resolve may be called concurrently.
package container
