// Package faults holds the fault suite: tests that build the sessiondb binary
// once and attack it the way a crash, a full disk, a damaged file or a hostile
// user would, checking each time that nothing acknowledged is lost, no file is
// changed that should not be, and the error says what happened.
//
// The package has no code of its own; everything is in its tests. The shared
// machinery (building the binary, running one command line with a guard,
// making a store) is in harness_test.go; each kind of attack has its own file.
package faults
