// Package peers measures once.Do beside what a user would pick instead —
// the raw driver doing the seed's statements, DBOS Transact and any other
// library a caller adds as a Peer — on PostgreSQL and Redis, every target
// interleaved in one run, with the ratio to raw taken per round.
//
// It lives in a module of its own so that only this module depends on
// DBOS. Its command is ./cmd/peers; a program outside the repository adds
// further peers by calling Main with them (bench/README.md, "Peers").
package peers
