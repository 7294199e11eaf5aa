package install

// Templates name the plugins they need (requiredTools.plugins), which
// must be compiled in: the tests use the set the binary ships.
import _ "talon/internal/standard"
