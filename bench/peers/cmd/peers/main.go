// Command peers measures once.Do beside the raw driver and DBOS Transact
// on PostgreSQL and Redis (package peers). Run it from bench/peers:
//
//	go run ./cmd/peers -rounds 5 -duration 1s > ../results/peers.md
//
// With -steps it measures steps instead (once.Do with 0, 1 and 3
// once.Steps beside DBOS workflows of 1 and 3 steps, on PostgreSQL):
//
//	go run ./cmd/peers -steps -rounds 5 -duration 1s
package main

import "github.com/stagedoor/once/bench/peers"

func main() { peers.Main() }
