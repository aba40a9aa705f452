package reflector

// ErrWatchFormat is errWatchFormat, for the tests of package reflector_test.
var ErrWatchFormat = errWatchFormat
