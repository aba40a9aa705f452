// Package listwatchertest holds fakes for testing code that drives a
// listwatcher.Reflector: a scripted ListerWatcher whose every request waits
// for the test to answer it, a Watcher the test feeds event by event (an
// EncodedWatcher with the encodings of the objects, as a ListWatch's watch),
// and a Sink that records what it receives.
package listwatchertest
