package main

import "github.com/stagedoor/once/bench/harness"

// The command's short names for package harness, which holds what the
// peers benchmark (module bench/peers) shares with it: the workload, the
// measured cell, the raw baselines and the library target.
type (
	path           = harness.Path
	target         = harness.Target
	sample         = harness.Sample
	keySeq         = harness.KeySeq
	seedStatements = harness.SeedStatements
)

const (
	pathFirst      = harness.PathFirst
	pathReplay     = harness.PathReplay
	pathInProgress = harness.PathInProgress
	pathMismatch   = harness.PathMismatch
	numPaths       = harness.NumPaths
	lease          = harness.Lease
	retention      = harness.Retention
	holdLease      = harness.HoldLease
	hotKey         = harness.HotKey
	pendingKey     = harness.PendingKey
)

var (
	fpA, fpB          = harness.FpA, harness.FpB
	storedOutcome     = harness.StoredOutcome
	charge            = harness.Charge
	rawResult         = harness.RawResult
	rawReplay         = harness.RawReplay
	token             = harness.Token
	runID             = harness.RunID
	runCell           = harness.RunCell
	seedTarget        = harness.SeedTarget
	oneRow            = harness.OneRow
	libraryTarget     = harness.LibraryTarget
	rawPostgresTarget = harness.RawPostgresTarget
	rawRedisTarget    = harness.RawRedisTarget
	rate              = harness.Rate
	dur               = harness.Dur
	median            = harness.Median
)
