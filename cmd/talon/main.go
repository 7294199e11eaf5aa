// Command talon runs AI employees for many tenants: an OpenClaw-compatible
// gateway whose agents' tools pass a layered, explainable tool policy.
//
// The commands here only wire flags to the internal packages; follow the
// names from each command's RunE to find the behaviour.
package main

import (
	"io"
	"os"
	_ "time/tzdata" // agents.defaults.userTimezone on a machine without a zone database
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes one command line and returns the exit status: 0 success, 1
// a check found problems, 2 bad input or usage.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRoot()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return 0
	}
	if e, ok := err.(exitError); ok {
		if e.msg != "" {
			io.WriteString(stderr, "talon: "+e.msg+"\n")
		}
		return e.code
	}
	io.WriteString(stderr, "talon: "+err.Error()+"\n")
	return 2
}

// exitError ends a command with a status other than 2.
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }
