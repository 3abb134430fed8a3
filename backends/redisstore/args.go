package redisstore

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/stagedoor/once/backends"
)

// rawArg is a command argument that go-redis writes as its bytes, through
// encoding.BinaryMarshaler. Boxed as a pointer into the command's []any it
// costs no allocation of its own, where a []byte, a string or an int64
// above 255 each cost one: so the hot commands' arguments, their record
// key included, live in one allocation with the command itself
// (claimArgs, completeArgs). go-redis reads a key as a string to route a
// command on a Cluster (and hooks print the arguments): a rawArg key reads
// as its bytes through String, at the cost of fmt.Sprint, so the Store
// passes a *redis.ClusterClient its keys as strings (keyArg).
type rawArg struct{ b []byte }

func (a *rawArg) MarshalBinary() ([]byte, error) { return a.b, nil }

// String is what hooks that format a command's arguments (tracing,
// logging) print: the bytes, as go-redis prints a []byte argument.
func (a *rawArg) String() string { return string(a.b) }

// MarshalJSON encodes the bytes as encoding/json encodes a []byte argument
// (base64), for hooks that log a command's arguments as JSON.
func (a *rawArg) MarshalJSON() ([]byte, error) { return json.Marshal(a.b) }

// keyArg returns the command argument of a record key written in a: a
// itself, or, for a *redis.ClusterClient, which routes every command by
// its key, the key as a string.
func (s *Store) keyArg(a *rawArg) any {
	if s.sharded {
		return string(a.b)
	}
	return a
}

// claimArgs are a claim's commands and their arguments, in one
// allocation (two on a Cluster: the key's string): the pipeline
//
//	PTTL key
//	SET key <pending record> NX PX life GET
//
// or, while the Store creates first (see Claim), the SET alone without its
// GET, which then goes to the pipeline when it finds a record (full).
// The key is written into keyBuf (room for a 96-byte key) and the pending
// record into buf (room for a 36-byte owner token, a 64-byte fingerprint
// and two 13-digit offsets); longer ones allocate.
type claimArgs struct {
	set              [7]any
	ttl              [2]any
	key, value, life rawArg
	ttlCmd           redis.IntCmd
	setCmd           redis.StringCmd
	keyBuf           [96]byte
	buf              [144]byte
	digits           [20]byte
}

// createArgs is how many of the SET's arguments the create alone sends:
// all but its GET.
const createArgs = 6

func (s *Store) newClaimArgs(ctx context.Context, p *backends.ClaimParams, life, leaseTail int64, alone bool) *claimArgs {
	a := &claimArgs{}
	a.key.b = appendKey(a.keyBuf[:0], s.prefix, p.Scope, p.Key, "")
	k := s.keyArg(&a.key)
	a.value.b = appendPending(a.buf[:0], p.Owner, p.Fingerprint, life, leaseTail)
	a.life.b = strconv.AppendInt(a.digits[:0], life, 10)
	a.set = [7]any{"set", k, &a.value, "nx", "px", &a.life, "get"}
	a.ttl = [2]any{"pttl", k}
	a.ttlCmd = *redis.NewIntCmd(ctx, a.ttl[:]...)
	if alone {
		a.setCmd = *redis.NewStringCmd(ctx, a.set[:createArgs]...)
	} else {
		a.setCmd = *redis.NewStringCmd(ctx, a.set[:]...)
	}
	return a
}

// full makes the SET the pipeline's, with its GET, after the create alone
// found a record.
func (a *claimArgs) full(ctx context.Context) {
	a.setCmd = *redis.NewStringCmd(ctx, a.set[:]...)
}

// completeArgs is complete.lua's EVALSHA and its arguments, in one
// allocation (two on a Cluster: the key's string):
//
//	EVALSHA <sha> 2 key steps-key owner outcome retention-ms notify
//
// The checkpoints key (the record's key followed by stepsSuffix), of which
// the record's key is a prefix, is written into keyBuf (room for a
// 122-byte record key), and the owner into ownerBuf (room for a 36-byte
// token); longer ones allocate.
type completeArgs struct {
	args                                  [9]any
	key, steps, owner, outcome, retention rawArg
	cmd                                   redis.Cmd
	digits                                [20]byte
	keyBuf                                [128]byte
	ownerBuf                              [36]byte
}

// completeSHA is complete.lua's SHA-1, boxed once: boxing the string on
// every completion would cost an allocation.
var completeSHA any = completeScript.Hash()

func (s *Store) newCompleteArgs(ctx context.Context, p *backends.CompleteParams, retention int64) *completeArgs {
	a := &completeArgs{}
	a.steps.b = appendKey(a.keyBuf[:0], s.prefix, p.Scope, p.Key, stepsSuffix)
	a.key.b = a.steps.b[:len(a.steps.b)-len(stepsSuffix)]
	a.owner.b = append(a.ownerBuf[:0], p.Owner...)
	a.outcome.b = p.Outcome
	a.retention.b = strconv.AppendInt(a.digits[:0], retention, 10)
	a.args = [9]any{"evalsha", completeSHA, 2, s.keyArg(&a.key), &a.steps, &a.owner, &a.outcome, &a.retention, s.notifyArg}
	a.cmd = *redis.NewCmd(ctx, a.args[:]...)
	a.cmd.SetFirstKeyPos(3)
	return a
}
