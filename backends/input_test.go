package backends

import (
	"strings"
	"testing"
)

func TestOwnerProblem(t *testing.T) {
	for _, c := range []struct {
		owner    string
		required bool
		want     string
	}{
		{"", true, "empty"},
		{"", false, ""},
		{"t", true, ""},
		{strings.Repeat("t", MaxOwnerLen), true, ""},
		{strings.Repeat("t", MaxOwnerLen+1), true, "longer than 255 bytes"},
		{strings.Repeat("t", MaxOwnerLen+1), false, "longer than 255 bytes"},
		{"\x00\xff", true, ""}, // an owner is opaque bytes: only its length counts
	} {
		if got := OwnerProblem(c.owner, c.required); got != c.want {
			t.Errorf("OwnerProblem(%d bytes, %v) = %q, want %q", len(c.owner), c.required, got, c.want)
		}
	}
}

func TestFingerprintProblem(t *testing.T) {
	for n, want := range map[int]string{0: "", 1: "", MaxFingerprintLen: "", MaxFingerprintLen + 1: "longer than 64 bytes"} {
		if got := FingerprintProblem(make([]byte, n)); got != want {
			t.Errorf("FingerprintProblem(%d bytes) = %q, want %q", n, got, want)
		}
	}
	if got := FingerprintProblem(nil); got != "" {
		t.Errorf("FingerprintProblem(nil) = %q", got)
	}
}

func TestInputProblemsDoNotAllocate(t *testing.T) {
	owner, long, fp := strings.Repeat("t", 32), strings.Repeat("t", MaxOwnerLen+1), make([]byte, MaxFingerprintLen+1)
	if n := testing.AllocsPerRun(100, func() {
		_ = OwnerProblem(owner, true)
		_ = OwnerProblem(long, true)
		_ = OwnerProblem("", true)
		_ = FingerprintProblem(fp)
	}); n != 0 {
		t.Errorf("%v allocations", n)
	}
}
