package claimmix

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestBiased(t *testing.T) {
	m := New(Biased)
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

func TestEven(t *testing.T) {
	m := New(Even)
	assert.False(t, m.CreateFirst(), "a new Mix reads first")
	m.Created()
	assert.True(t, m.CreateFirst(), "after a new key")
	m.Found()
	assert.False(t, m.CreateFirst(), "as many records met as keys created")
	for range 3 {
		m.Created()
		m.Found()
		m.Created()
	}
	assert.True(t, m.CreateFirst(), "more new keys than records met")
	for range Max {
		m.Found()
	}
	assert.EqualValues(t, Max, m.score.Load(), "saturates at Max")
	for range Max / 2 {
		m.Created()
		assert.False(t, m.CreateFirst())
	}
	m.Created()
	assert.True(t, m.CreateFirst(), "Max/2+1 new keys after Max records met")
	for range Max {
		m.Created()
	}
	assert.EqualValues(t, 0, m.score.Load(), "saturates at 0")
}
