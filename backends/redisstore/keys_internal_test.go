package redisstore

import (
	"strconv"
	"strings"
	"testing"
)

// decodeKey inverts recordKey, to prove it injective: a function with a
// left inverse never maps two inputs to one output.
func decodeKey(prefix, k string) (scope, key string, ok bool) {
	rest, ok := strings.CutPrefix(k, prefix+"{")
	if !ok || !strings.HasSuffix(rest, "}") {
		return "", "", false
	}
	rest = rest[:len(rest)-1]
	digits, rest, ok := strings.Cut(rest, ":")
	if !ok {
		return "", "", false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 || n >= len(rest) || rest[n] != ':' {
		return "", "", false
	}
	s, k1 := rest[:n], rest[n+1:]
	if strings.Contains(s, "}") || strings.Contains(k1, "}") {
		return "", "", false
	}
	return unescape(s), unescape(k1), true
}

func unescape(s string) string {
	return strings.NewReplacer("%7D", "}", "%25", "%").Replace(s)
}

func TestRecordKey(t *testing.T) {
	for _, c := range []struct{ scope, key, want string }{
		{"a:b", "c", "once:{3:a:b:c}"},
		{"a", "b:c", "once:{1:a:b:c}"},
		{"user-1", "7f9c", "once:{6:user-1:7f9c}"},
		{"{a}", "b", "once:{5:{a%7D:b}"},
		{"{a", "}b", "once:{2:{a:%7Db}"},
		{"*", "*", "once:{1:*:*}"},
		{"100%", "}", "once:{6:100%25:%7D}"},
	} {
		if got := recordKey("once:", c.scope, c.key); got != c.want {
			t.Errorf("recordKey(%q, %q) = %q, want %q", c.scope, c.key, got, c.want)
		}
	}
}

func TestRecordKeyInjective(t *testing.T) {
	parts := []string{"a", "b", "c", ":", "a:b", "b:c", "{", "}", "{a}", "a}", "{a", "*", "%", "%7D", "%25", "1:", "1:a", "}b", ""}
	seen := map[string][2]string{}
	for _, s := range parts {
		for _, k := range parts {
			got := recordKey("p:", s, k)
			if prev, dup := seen[got]; dup {
				t.Fatalf("(%q, %q) and (%q, %q) both encode to %q", prev[0], prev[1], s, k, got)
			}
			seen[got] = [2]string{s, k}
			// The hash tag is the whole pair: one "}" only, at the end.
			if strings.Count(got, "}") != 1 || !strings.HasSuffix(got, "}") {
				t.Fatalf("%q: a brace inside the pair would cut the hash tag", got)
			}
		}
	}
}

func FuzzRecordKey(f *testing.F) {
	f.Add("a:b", "c")
	f.Add("{x}", "%7D")
	f.Fuzz(func(t *testing.T, scope, key string) {
		k := recordKey("once:", scope, key)
		s2, k2, ok := decodeKey("once:", k)
		if !ok || s2 != scope || k2 != key {
			t.Fatalf("recordKey(%q, %q) = %q decodes to (%q, %q, %v)", scope, key, k, s2, k2, ok)
		}
	})
}

func TestInfoField(t *testing.T) {
	info := "# Memory\r\nused_memory:1\r\nmaxmemory_policy:allkeys-lru\r\n"
	if v, ok := infoField(info, "maxmemory_policy"); !ok || v != "allkeys-lru" {
		t.Fatalf("got %q %v", v, ok)
	}
	if _, ok := infoField(info, "absent"); ok {
		t.Fatal("absent field found")
	}
}

// TestPrefixWithBraceAliasesAnotherPrefix is why New refuses a KeyPrefix
// with "{" (checkKeyPrefix): recordKey is injective for one prefix, but
// not across a prefix and that prefix followed by "{" and more, so two
// stores on one database would read and write each other's records. No
// two prefixes without "{" do: their keys differ within the shorter
// prefix, or at the byte after it, "{" in one key and a byte of the
// longer prefix, not "{", in the other.
func TestPrefixWithBraceAliasesAnotherPrefix(t *testing.T) {
	if a, b := recordKey("once:{5:", "a", ":x"), recordKey("once:", "{1:a:", "x"); a != b {
		t.Fatalf("%q != %q: the example of Config.KeyPrefix no longer aliases", a, b)
	}
	for _, p := range []string{"once:{5:", "{", "a{b}", "x}{"} {
		if err := checkKeyPrefix(p); err == nil {
			t.Errorf("checkKeyPrefix(%q) accepted it", p)
		}
	}
	for _, p := range []string{"", "once:", "a}b", "tenant-1:", "*:"} {
		if err := checkKeyPrefix(p); err != nil {
			t.Errorf("checkKeyPrefix(%q) = %v", p, err)
		}
	}
	// Prefixes without "{", scopes and keys with braces and colons: no two
	// (prefix, scope, key) map to one Redis key.
	prefixes := []string{"p", "p:", "p:5:", "p}", "p:1", "q"}
	parts := []string{"a", ":", "{", "}", "{1:a:", "1:", ":x", "x", "a:"}
	seen := map[string][3]string{}
	for _, p := range prefixes {
		for _, s := range parts {
			for _, k := range parts {
				got := recordKey(p, s, k)
				if prev, dup := seen[got]; dup {
					t.Fatalf("%q and %q both encode to %q", prev, [3]string{p, s, k}, got)
				}
				seen[got] = [3]string{p, s, k}
			}
		}
	}
}

// hashTag is the part of k that Redis Cluster hashes: between the first
// "{" and the first "}" after it, when non-empty; else all of k.
func hashTag(k string) string {
	if i := strings.IndexByte(k, '{'); i >= 0 {
		if j := strings.IndexByte(k[i+1:], '}'); j > 0 {
			return k[i+1 : i+1+j]
		}
	}
	return k
}

// TestRecordKeys: the key of a record's checkpoints is the record's key
// followed by ":steps", in the record's slot (same hash tag), never the
// key of any record (those end in "}", which List's SCAN pattern requires).
func TestRecordKeys(t *testing.T) {
	prefixes := []string{"once:", "p}", "a}b", ""}
	parts := []string{"a", ":", "{", "}", "{a}", "%7D", "x:steps", "1:a"}
	for _, p := range prefixes {
		for _, s := range parts {
			for _, k := range parts {
				rec, steps := recordKeys(p, s, k)
				if rec != recordKey(p, s, k) || steps != rec+stepsSuffix {
					t.Fatalf("recordKeys(%q, %q, %q) = %q, %q", p, s, k, rec, steps)
				}
				if hashTag(steps) != hashTag(rec) || hashTag(rec) == rec {
					t.Fatalf("%q and %q hash apart", rec, steps)
				}
				if strings.HasSuffix(steps, "}") {
					t.Fatalf("%q ends like a record key", steps)
				}
			}
		}
	}
}
