package once

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/internal/envelope"
)

// The pooled JSON path must store exactly what json.Marshal gives, so that
// records written before and after it replay alike.
func TestPooledJSONEncodingMatchesMarshal(t *testing.T) {
	values := []any{
		map[string]any{"b": 1, "a": "<html>&</html>", "c": []int{1, 2}},
		"plain", 42, nil, []byte{0, 1, 2}, struct {
			A string `json:"a"`
			B *int   `json:"b,omitempty"`
		}{A: "x"},
		string(make([]byte, 70<<10)), // larger than a pooled buffer
	}
	for _, v := range values {
		want, err := json.Marshal(v)
		require.NoError(t, err)
		for range 2 { // the second time through a reused buffer
			got, err := encodeValue[any](jsonCodec{}, v)
			require.NoError(t, err)
			assert.Equal(t, envelope.Value(want), got)
		}
	}
	_, err := encodeValue[any](jsonCodec{}, make(chan int))
	assert.Error(t, err)
}
