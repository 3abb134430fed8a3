package once_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
)

// appendedSKU has only encoding.TextAppender among the text and JSON
// methods: encoding/json v1 ignores it, but encoding/json built with
// GOEXPERIMENT=jsonv2 (v1 API on the v2 engine) encodes it through
// AppendText, and decodes the text back as it is.
type appendedSKU string

func (s appendedSKU) AppendText(b []byte) ([]byte, error) { return append(b, "sku-"+s...), nil }

// appendedQty is an integer encoded by AppendText under jsonv2, as a JSON
// string that does not decode back into an integer.
type appendedQty int

func (q appendedQty) AppendText(b []byte) ([]byte, error) { return append(b, "seven"...), nil }

// The first caller gets what every replay gets, for types whose encoding
// a method takes over, also under GOEXPERIMENT=jsonv2, whose encoding/json
// encodes through AppendText: the first caller gets "sku-a1" as replays do.
func TestFirstCallerGetsTheReplayOfAnAppendTextType(t *testing.T) {
	ctx := context.Background()
	scope := once.New(nil).Scope("s")
	fnSKU := func(context.Context) (appendedSKU, error) { return "a1", nil }
	first, firstErr := once.Do(ctx, scope, "sku", nil, fnSKU)
	replay, replayErr := once.Do(ctx, scope, "sku", nil, fnSKU)
	require.NoError(t, replayErr)
	assert.Equal(t, replay, first)
	assert.NoError(t, firstErr)

	fnQty := func(context.Context) (appendedQty, error) { return 3, nil }
	firstQ, firstQErr := once.Do(ctx, scope, "qty", nil, fnQty)
	replayQ, replayQErr := once.Do(ctx, scope, "qty", nil, fnQty)
	assert.Equal(t, replayQErr == nil, firstQErr == nil, "first: %v, replay: %v", firstQErr, replayQErr)
	assert.Equal(t, replayQ, firstQ)
}
