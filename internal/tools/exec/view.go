package exec

import (
	"context"

	"talon/internal/approval"
	"talon/internal/approval/analyze"
	"talon/internal/sandbox"
	"talon/internal/sandbox/host"
	"talon/internal/tools"
)

// view is where one command runs, as the approval policy and the command
// analyser must see it: the host (the session's sandbox, or the gateway
// when the session has none), the file system, PATH and HOME the command
// will resolve its programs with, and its working directory as it sees it.
type view struct {
	host approval.Host
	env  analyze.Env
	// err says why the working directory is refused: on the gateway host
	// it must resolve inside the workspace (host.Sandbox.Dir).
	err error
}

// commandPath is the PATH every backend gives commands (host.Path,
// bwrap.Path and the docker backend's are one value; a test checks the
// first two).
const commandPath = host.Path

// viewOf works out the view of a command run in env's sandbox from workdir
// (a sandbox path; "" is the workspace). What it cannot know makes the
// analysis undecidable (no working directory, executables not found),
// which is a miss, never a hit:
//
//   - the host backend (a session that is not sandboxed): the gateway, the
//     host's files, the working directory mapped to its host directory as
//     the backend maps it, HOME the workspace; a working directory the
//     backend refuses (outside the workspace, or a symlink out of it) is
//     the view's err, and the command is refused before any decision;
//   - bwrap: the sandbox, the host's /usr, /bin, /sbin, /lib* and
//     /etc/alternatives (which the sandbox binds read-only), the workspace
//     at /workspace and the spec's mounts, HOME /workspace;
//   - docker: the sandbox, only the workspace and mounts, since the image's
//     files are not on the host: its programs cannot be resolved, so a
//     docker session's commands are never allowlist hits;
//   - any other sandbox: the sandbox when it isolates, the gateway when
//     not, with nothing resolvable.
func viewOf(env *tools.Env, workdir string) view {
	if workdir == "" {
		workdir = sandbox.Workdir
	}
	switch sb := env.Sandbox.(type) {
	case *sandbox.Session:
		p := sb.Plan()
		if !env.Isolated {
			// The host backend's own mapping of working directories: a
			// host sandbox of the same spec only validates it and maps.
			var b host.Backend
			hs, err := b.Open(context.Background(), p.Spec)
			if err != nil {
				return view{host: approval.HostGateway, env: analyze.Env{PATH: commandPath, FS: analyze.MountFS{}}}
			}
			return hostView(hs.(*host.Sandbox), workdir)
		}
		mounts := []analyze.Mount{{Source: p.Spec.Root, Target: sandbox.Workdir}}
		home := sandbox.Workdir
		if p.Backend.Value == sandbox.BackendBwrap {
			for _, d := range bwrapSystem {
				mounts = append(mounts, analyze.Mount{Source: d, Target: d})
			}
		} else {
			home = "/tmp"
		}
		for _, m := range p.Spec.Mounts {
			mounts = append(mounts, analyze.Mount{Source: m.Source, Target: m.Target})
		}
		return view{host: approval.HostSandbox, env: analyze.Env{Dir: workdir, PATH: commandPath, HOME: home, FS: analyze.MountFS{Mounts: mounts}}}
	case *host.Sandbox:
		return hostView(sb, workdir)
	}
	if env.Isolated {
		return view{host: approval.HostSandbox, env: analyze.Env{Dir: workdir, PATH: commandPath, FS: analyze.MountFS{}}}
	}
	return view{host: approval.HostGateway, env: analyze.Env{PATH: commandPath, FS: analyze.MountFS{}}}
}

// bwrapSystem are the host paths a bwrap sandbox binds at the same place:
// where its programs are, and Debian's alternatives, which many of them
// are symlinks through.
var bwrapSystem = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc/alternatives"}

// hostView is the view of the host backend's sandbox sb: the gateway, the
// host's files, workdir mapped to the host directory sb runs it in, HOME
// the workspace as the backend sets it.
func hostView(sb *host.Sandbox, workdir string) view {
	root, _ := sb.Dir("")
	dir, err := sb.Dir(workdir)
	// On an error Dir is "", which is not absolute: undecidable, should
	// anyone analyse it.
	return view{host: approval.HostGateway, env: analyze.Env{Dir: dir, PATH: commandPath, HOME: root, FS: analyze.HostFS{}}, err: err}
}
