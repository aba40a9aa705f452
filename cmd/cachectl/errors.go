package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

var (
	// errUsage marks a usage error: a bad flag, argument or flag value. It
	// exits 1, as kubectl's do (cmdutil.CheckErr exits 1 for every error).
	errUsage = errors.New("usage error")
	// errNotFound means a named object is not in the store.
	errNotFound = errors.New("not found")
	// errUnknownResource means no store of the file holds the resource asked for.
	errUnknownResource = errors.New("unknown resource")
	// errAmbiguous means a resource name matches more than one store.
	errAmbiguous = errors.New("ambiguous resource")
	// errCheckFailed means check found problems in the file.
	errCheckFailed = errors.New("check failed")
	// errSymlink means a destination is a symbolic link and following it was not asked for.
	errSymlink = errors.New("destination is a symbolic link")
	// errInterrupted means SIGINT or SIGTERM stopped the command (exit 130).
	errInterrupted = errors.New("interrupted")
	// errServer means the apiserver refused a request or could not be
	// reached; the message is kubectl's and is printed without "error: ".
	errServer = errors.New("server error")
	// errUnexpectedPrint means a printer wrote what a streamed get does
	// not expect of it (a List that does not begin and end as kubectl's):
	// get stops rather than print a List that is not kubectl's.
	errUnexpectedPrint = errors.New("unexpected printer output")
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
	case errors.Is(err, errInterrupted), errors.Is(err, context.Canceled):
		return 130 // 128 + SIGINT, as a shell reports a process Ctrl-C ended
	}
	return 1
}

// oneLine flattens an error message to one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", " ")), " ")
}

// serverError describes err as kubectl does when it comes from the
// apiserver (a Status) or from reaching it (a *url.Error); any other error
// is returned as it is.
func serverError(err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		s := status.Status()
		switch {
		case s.Reason == metav1.StatusReasonUnauthorized:
			return newError(errServer, "error: You must be logged in to the server (%s)", s.Message)
		case s.Reason != "":
			return newError(errServer, "Error from server (%s): %s", s.Reason, s.Message)
		default:
			return newError(errServer, "Error from server: %s", s.Message)
		}
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		host := urlErr.URL
		if u, perr := url.Parse(urlErr.URL); perr == nil {
			host = u.Host
		}
		if utilnet.IsConnectionRefused(urlErr.Err) {
			return newError(errServer, "The connection to the server %s was refused - did you specify the right host or port?", host)
		}
		return newError(errServer, "Unable to connect to the server: %v", urlErr.Err)
	}
	return err
}
