package claimmix

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestScore(t *testing.T) {
	m := New()
	for range Start - 1 {
		m.Created()
		assert.False(t, m.CreateFirst())
	}
	m.Created()
	assert.True(t, m.CreateFirst(), "after Start new keys")
	m.Created()
	assert.EqualValues(t, 0, m.score.Load(), "saturates at 0")
	m.Found()
	assert.EqualValues(t, Rise, m.score.Load())
	assert.False(t, m.CreateFirst(), "a claim that met a record")
	for range Max {
		m.Found()
	}
	assert.EqualValues(t, Max, m.score.Load(), "saturates at Max")
	m.Created()
	assert.EqualValues(t, Max-1, m.score.Load())
}
