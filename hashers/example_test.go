package hashers_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/hashers"
)

// Length prefixes keep part boundaries apart.
func ExampleStrings() {
	fmt.Println(bytes.Equal(hashers.Strings("ab", "c"), hashers.Strings("a", "bc")))
	fmt.Println(len(hashers.Strings("order", "9b1e4d3a")))
	// Output:
	// false
	// 32
}

// A retry whose JSON was re-serialised still matches; a changed amount
// does not, even where float64 would round both to the same value.
func ExampleJSON() {
	first, _ := hashers.JSON([]byte(`{"amount": 0.1, "currency": "EUR"}`))
	retry, _ := hashers.JSON([]byte(`{"currency":"EUR","amount":1e-1}`))
	other, _ := hashers.JSON([]byte(`{"amount": 0.10000000000000001, "currency": "EUR"}`))
	fmt.Println(bytes.Equal(first, retry), bytes.Equal(first, other))

	_, err := hashers.JSON([]byte(`{"amount": 1, "amount": 2}`))
	fmt.Println(err)
	// Output:
	// true false
	// hashers: invalid JSON at offset 0: duplicate object key
}

// Only the selected fields count; a client-side trace id may change.
func ExampleFields() {
	a, _ := hashers.Fields([]byte(`{"amount":150,"customer":{"id":"c_1"},"trace":"t1"}`), "amount", "customer.id")
	b, _ := hashers.Fields([]byte(`{"trace":"t2","customer":{"id":"c_1"},"amount":150}`), "customer.id", "amount")
	fmt.Println(bytes.Equal(a, b))
	// Output: true
}

// An HTTP middleware fingerprints the request before the handler runs;
// the handler still reads the whole body.
func ExampleRequestHasher() {
	h := hashers.RequestHasher{Body: hashers.JSON} // 1 MiB cap, query ignored

	first := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{"hold_ids":[88211,88212]}`))
	retry := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader("{\n  \"hold_ids\": [88211, 88212]\n}"))

	var fps []once.Fingerprint
	for _, r := range []*http.Request{first, retry} {
		fp, err := h.Hash(r)
		if err != nil {
			fmt.Println(err) // a middleware answers 413 for ErrBodyTooLarge, 400 for ErrInvalidJSON
			return
		}
		fps = append(fps, fp)
	}
	fmt.Println(bytes.Equal(fps[0], fps[1]))

	body, _ := io.ReadAll(first.Body) // what the handler sees
	fmt.Println(string(body))
	// Output:
	// true
	// {"hold_ids":[88211,88212]}
}
