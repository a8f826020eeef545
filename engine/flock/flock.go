// Package flock takes the exclusive advisory lock (flock(2)) of a lock file, the way sailtui's
// processes on one machine serialise their work on files they share: the local runtime's
// records and pauses, a kept log's rotation (engine/logfile). flock serialises goroutines of one
// process too, as each Lock opens a file description of its own.
package flock
