// Package standard imports the modules the talon binary ships, each of
// which registers itself in its package's init: the compiled-in plugins
// (api-tools, image-gen, memory-core) with internal/plugin and the
// sandbox backends (bwrap, docker, host) with internal/sandbox.
//
// cmd/talon imports it (modules.go), and so do the tests that build a
// gateway or a runner as the binary does; a package that needs only one
// module imports that module. A build that leaves a module out changes
// only this list: the plugin host then does not list the plugin, and
// sandbox.backend refuses the backend's name.
package standard

import (
	_ "talon/internal/memory"          // memory-core
	_ "talon/internal/plugin/apitools" // api-tools
	_ "talon/internal/plugin/imagegen" // image-gen
	_ "talon/internal/sandbox/bwrap"   // sandbox.backend "bwrap"
	_ "talon/internal/sandbox/docker"  // sandbox.backend "docker"
	_ "talon/internal/sandbox/host"    // sandbox.backend "host"
)
