// Package reflectortest holds fakes for testing code that drives a
// reflector.Reflector: a scripted ListerWatcher whose every request waits for
// the test to answer it, a Watcher the test feeds event by event, and a Sink
// that records what it receives.
package reflectortest
