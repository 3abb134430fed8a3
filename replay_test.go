package once_test

import (
	"bytes"
	"context"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/memory"
)

// gobCodec is a binary codec: its bytes are not UTF-8.
type gobCodec struct{}

func (gobCodec) Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	err := gob.NewEncoder(&b).Encode(v)
	return b.Bytes(), err
}

func (gobCodec) Unmarshal(data []byte, v any) error {
	return gob.NewDecoder(bytes.NewReader(data)).Decode(v)
}

// losslessCodec declares its round trip lossless.
type losslessCodec struct{}

func (losslessCodec) Marshal(v any) ([]byte, error) { return json.Marshal(v) }

func (losslessCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

func (losslessCodec) Lossless() {}

// firstAndReplay runs fn under key on scope twice and returns both answers.
func firstAndReplay[T any](t *testing.T, scope once.Scope, fn func(context.Context) (T, error)) (first, replay once.Outcome[T], firstErr, replayErr error) {
	t.Helper()
	ctx := context.Background()
	first, firstErr = once.DoOutcome(ctx, scope, "k", nil, fn)
	replay, replayErr = once.DoOutcome(ctx, scope, "k", nil, fn)
	require.Equal(t, once.Replayed, replay.Status)
	require.NotEqual(t, once.Replayed, first.Status)
	return first, replay, firstErr, replayErr
}

// A registered error type comes back with a binary codec, byte for byte:
// its fields survive even when they are not valid UTF-8.
func TestTypedFinalErrorsReplayWithABinaryCodec(t *testing.T) {
	scope := once.New(nil, once.WithCodec(gobCodec{}), once.RegisterError[*CardDeclinedError]("card_declined")).Scope("s")
	reason := "lost\xff\xfe\x00card" // not UTF-8
	_, _, first, replay := firstAndReplay(t, scope, func(context.Context) (int, error) {
		return 0, once.Final(&CardDeclinedError{Reason: reason})
	})
	for _, err := range []error{first, replay} {
		var declined *CardDeclinedError
		require.ErrorAs(t, err, &declined)
		assert.Equal(t, reason, declined.Reason)
	}
}

type withHidden struct {
	Public string
	hidden string
}

// The first caller gets what every replay gets: the value after the codec's
// round trip, not fn's value in memory.
func TestTheFirstAnswerIsTheReplay(t *testing.T) {
	t.Run("int64 inside any", func(t *testing.T) {
		first, replay, err1, err2 := firstAndReplay(t, once.New(nil).Scope("s"), func(context.Context) (any, error) {
			return map[string]any{"amount": int64(1) << 60}, nil
		})
		require.NoError(t, err1)
		require.NoError(t, err2)
		assert.Equal(t, replay.Value, first.Value)
		assert.IsType(t, float64(0), first.Value.(map[string]any)["amount"], "JSON's type, on the first call too")
	})
	t.Run("unexported field", func(t *testing.T) {
		first, replay, _, _ := firstAndReplay(t, once.New(nil).Scope("s"), func(context.Context) (withHidden, error) {
			return withHidden{Public: "p", hidden: "h"}, nil
		})
		assert.Equal(t, replay.Value, first.Value)
		assert.Equal(t, withHidden{Public: "p"}, first.Value)
	})
	t.Run("invalid UTF-8 string", func(t *testing.T) {
		first, replay, _, _ := firstAndReplay(t, once.New(nil).Scope("s"), func(context.Context) (string, error) {
			return "a\xffb", nil
		})
		assert.Equal(t, replay.Value, first.Value)
	})
	t.Run("invalid UTF-8 in a struct whose round trip is otherwise exact", func(t *testing.T) {
		type line struct {
			SKU string `json:"sku"`
			Qty int    `json:"qty"`
		}
		first, replay, _, _ := firstAndReplay(t, once.New(nil).Scope("s"), func(context.Context) (line, error) {
			return line{SKU: "a\xffb", Qty: 2}, nil
		})
		assert.Equal(t, replay.Value, first.Value)
		assert.Equal(t, line{SKU: "a\uFFFDb", Qty: 2}, first.Value)
	})
	t.Run("wrapped registered error", func(t *testing.T) {
		errUpstream := errors.New("upstream said no")
		scope := once.New(nil, once.RegisterError[*CardDeclinedError]("card_declined")).Scope("s")
		_, _, first, replay := firstAndReplay(t, scope, func(context.Context) (int, error) {
			return 0, once.Final(fmt.Errorf("charge %s: %w (%w)", "o-1", &CardDeclinedError{Reason: "stolen"}, errUpstream))
		})
		assert.Equal(t, first.Error(), replay.Error())
		assert.Equal(t, "charge o-1: card declined: stolen (upstream said no)", replay.Error())
		var a, b *CardDeclinedError
		require.ErrorAs(t, first, &a)
		require.ErrorAs(t, replay, &b)
		assert.Equal(t, a, b)
		assert.Equal(t, errors.Is(first, errUpstream), errors.Is(replay, errUpstream), "the same errors.Is answers")
	})
	t.Run("unregistered final error", func(t *testing.T) {
		_, _, first, replay := firstAndReplay(t, once.New(nil).Scope("s"), func(context.Context) (int, error) {
			return 0, once.Final(fmt.Errorf("declined: %w", errors.New("do not honor")))
		})
		assert.Equal(t, first, replay)
		assert.EqualError(t, first, "declined: do not honor")
	})
	t.Run("value that does not encode", func(t *testing.T) {
		_, _, first, replay := firstAndReplay(t, once.New(nil).Scope("s"), func(context.Context) (chan int, error) {
			return make(chan int), nil
		})
		assert.Equal(t, first, replay)
		assert.Contains(t, first.Error(), "outcome cannot be encoded")
	})
	t.Run("too large", func(t *testing.T) {
		first, replay, err1, err2 := firstAndReplay(t, once.New(nil, once.WithMaxOutcomeSize(16)).Scope("s"), func(context.Context) (string, error) {
			return strings.Repeat("x", 64), nil
		})
		assert.Equal(t, err1, err2)
		assert.ErrorAs(t, err2, new(*once.OutcomeTooLargeError))
		assert.Equal(t, strings.Repeat("x", 64), first.Value, "documented: the first caller still gets the value")
		assert.Empty(t, replay.Value)
	})
	t.Run("lossless codec opts out", func(t *testing.T) {
		first, replay, _, _ := firstAndReplay(t, once.New(nil, once.WithCodec(losslessCodec{})).Scope("s"), func(context.Context) (withHidden, error) {
			return withHidden{Public: "p", hidden: "h"}, nil
		})
		assert.Equal(t, withHidden{Public: "p", hidden: "h"}, first.Value, "fn's value as it is")
		assert.Equal(t, withHidden{Public: "p"}, replay.Value, "a codec that lies about losslessness is the codec's bug")
	})
}

// aliasingCodec stores a []byte as is and decodes it without a copy, as a
// zero-copy codec may: the decoded value shares the bytes it was given.
type aliasingCodec struct{}

func (aliasingCodec) Marshal(v any) ([]byte, error) { return v.([]byte), nil }
func (aliasingCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = data
	return nil
}

// A replay from the memory store decodes bytes
// of its own: a caller that modifies its replayed value (a zero-copy
// codec's value aliases what it decoded) changes neither the stored record
// nor what later replays get.
func TestMemoryReplayDoesNotShareBytesBetweenCallers(t *testing.T) {
	ctx := context.Background()
	scope := once.New(memory.New(nil), once.WithCodec(aliasingCodec{})).Scope("s")
	fn := func(context.Context) ([]byte, error) { return []byte("paid"), nil }
	_, err := once.Do(ctx, scope, "k", nil, fn)
	require.NoError(t, err)
	first, err := once.DoOutcome(ctx, scope, "k", nil, fn)
	require.NoError(t, err)
	require.Equal(t, once.Replayed, first.Status)
	copy(first.Value, "XXXX") // the caller's own value
	second, err := once.DoOutcome(ctx, scope, "k", nil, fn)
	require.NoError(t, err)
	require.Equal(t, once.Replayed, second.Status)
	require.Equal(t, []byte("paid"), second.Value, "a replay is not changed by what another caller did to its value")
}
