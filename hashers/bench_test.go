package hashers

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func BenchmarkParts(b *testing.B) {
	method, path, body := []byte("POST"), []byte("/orders"), bytes.Repeat([]byte("x"), 64)
	b.ReportAllocs()
	for b.Loop() {
		Parts(method, path, body)
	}
}

func BenchmarkStrings(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Strings("order", "9b1e4d3a-5b1d-4e8a-9f60-2c4d8e1b7a05")
	}
}

func BenchmarkRequest(b *testing.B) {
	body := bytes.Repeat([]byte("0123456789abcdef"), 64) // 1 KiB
	r := httptest.NewRequest(http.MethodPost, "/orders", nil)
	rd := bytes.NewReader(body)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset(body)
		r.Body, r.ContentLength = io.NopCloser(rd), int64(len(body))
		if _, err := (RequestHasher{}).Hash(r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRequestJSON(b *testing.B) {
	body := jsonObject1KiB()
	r := httptest.NewRequest(http.MethodPost, "/orders", nil)
	rd := bytes.NewReader(body)
	h := RequestHasher{Body: JSON}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset(body)
		r.Body, r.ContentLength = io.NopCloser(rd), int64(len(body))
		if _, err := h.Hash(r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkJSON(b *testing.B) {
	data := jsonObject1KiB()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := JSON(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFields(b *testing.B) {
	data := jsonObject1KiB()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Fields(data, "amount", "customer.id"); err != nil {
			b.Fatal(err)
		}
	}
}

// jsonObject1KiB returns an order-like object of about 1 KiB, keys not in
// sorted order, with nested objects, arrays, escapes and decimals.
func jsonObject1KiB() []byte {
	var sb strings.Builder
	sb.WriteString(`{"payment_method":"pm_4Yc\u00e9","amount":1250.50,"currency":"EUR",`)
	sb.WriteString(`"customer":{"name":"Ada \"L\" Lovelace","id":"cus_9b1e4d3a","email":"ada@example.com"},"items":[`)
	for i := range 12 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"sku":"SKU-%04d","qty":%d,"price":%d.99,"tags":["a","b"]}`, i, i+1, 10*i)
	}
	sb.WriteString(`],"hold_ids":[88211,88212,88213],"note":"leave at door\nring twice","created":1.7e9}`)
	return []byte(sb.String())
}

// BenchmarkJSONLargeLiteral compares the cost per byte of three documents of
// the same size: one long string, one number with a huge exponent and one
// with a huge mantissa. Canonicalisation is linear in its input, so the
// three report similar ns/op per byte (see MB/s).
func BenchmarkJSONLargeLiteral(b *testing.B) {
	const n = 512 << 10
	docs := []struct {
		name string
		data []byte
	}{
		{"string", []byte(`"` + strings.Repeat("x", n) + `"`)},
		{"exponent", []byte("1e" + strings.Repeat("7", n))},
		{"negative-exponent", []byte("1.5e-" + strings.Repeat("9", n))},
		{"mantissa", []byte(strings.Repeat("7", n/2) + "." + strings.Repeat("3", n/2) + "e-12")},
	}
	for _, d := range docs {
		b.Run(d.name, func(b *testing.B) {
			b.SetBytes(int64(len(d.data)))
			for b.Loop() {
				if _, err := JSON(d.data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
