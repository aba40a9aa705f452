package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

var (
	// errUsage marks a usage error (exit code 2): a bad flag, argument or
	// flag value.
	errUsage = errors.New("usage error")
	// errNotFound means a named object is not in the store.
	errNotFound = errors.New("not found")
	// errUnknownResource means no store of the file holds the resource asked for.
	errUnknownResource = errors.New("unknown resource")
	// errAmbiguous means a resource name matches more than one store.
	errAmbiguous = errors.New("ambiguous resource")
	// errCheckFailed means check found problems in the file.
	errCheckFailed = errors.New("check failed")
	// errInterrupted means SIGINT or SIGTERM stopped the command (exit 130).
	errInterrupted = errors.New("interrupted")
)

// usageError is a usage error with the command whose help explains it.
type usageError struct {
	cmd string
	msg string
}

func (e *usageError) Error() string {
	if e.cmd == "" {
		return e.msg
	}
	return fmt.Sprintf("%s (see '%s --help')", e.msg, e.cmd)
}

func (e *usageError) Unwrap() error { return errUsage }

// usageErrorf makes a usage error for cmd.
func usageErrorf(cmd *cobra.Command, format string, args ...interface{}) error {
	name := ""
	if cmd != nil {
		name = cmd.CommandPath()
	}
	return &usageError{cmd: name, msg: fmt.Sprintf(format, args...)}
}

// cliError is an error whose message is complete as it is; errors.Is
// matches its sentinel.
type cliError struct {
	sentinel error
	msg      string
}

func (e *cliError) Error() string { return e.msg }
func (e *cliError) Unwrap() error { return e.sentinel }

// newError makes an error that reads as format but is errors.Is sentinel.
func newError(sentinel error, format string, args ...interface{}) error {
	return &cliError{sentinel: sentinel, msg: fmt.Sprintf(format, args...)}
}

// exitCode maps an error to the process's exit code.
func exitCode(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage):
		return 2
	case errors.Is(err, errInterrupted), errors.Is(err, context.Canceled):
		return 130 // 128 + SIGINT, as a shell reports a process Ctrl-C ended
	}
	return 1
}

// oneLine flattens an error message to one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", " ")), " ")
}
