package api

import (
	"bytes"
	"testing"
)

func TestEncodeDecodeBytes(t *testing.T) {
	for _, b := range [][]byte{nil, []byte("héllo\n"), {0xff, 0xfe, 0}, []byte("a\x00b"), {0xe2, 0x82}} {
		data, enc := EncodeBytes(b)
		got, err := DecodeBytes(data, enc)
		if err != nil || !bytes.Equal(got, b) {
			t.Errorf("%q: encoded %q/%q, decoded %q, %v", b, data, enc, got, err)
		}
	}
	if _, enc := EncodeBytes([]byte("text")); enc != "" {
		t.Errorf("text got encoding %q", enc)
	}
	if _, enc := EncodeBytes([]byte{0xff}); enc != EncodingBase64 {
		t.Errorf("binary got encoding %q", enc)
	}
	if _, err := DecodeBytes("!!!", EncodingBase64); err == nil {
		t.Error("bad base64 decoded without an error")
	}
	if _, err := DecodeBytes("x", "rot13"); err == nil {
		t.Error("an unknown encoding decoded without an error")
	}
	if b, err := DecodeBytes("x", EncodingUTF8); err != nil || string(b) != "x" {
		t.Errorf("utf-8: %q %v", b, err)
	}
}
