package tools

import (
	"fmt"
	"os"
	"syscall"
)

// SingleLink refuses a regular file with more than one hard link. os.Root
// keeps paths inside the workspace, but a hard link is the same file under
// two names: one inside, one possibly outside (a host file someone linked
// in), and no path check can tell which. Reading one would leak the
// outside file, so tools that read workspace files read only files with a single name.
func SingleLink(fi os.FileInfo, shown string) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.Mode().IsRegular() || st.Nlink <= 1 {
		return nil
	}
	return fmt.Errorf("%q has %d hard links; the file tools do not read a file with more than one name, since another name may be outside the workspace (copy it to a file of its own first)", shown, st.Nlink)
}
