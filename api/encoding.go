package api

import (
	"encoding/base64"
	"fmt"
	"unicode/utf8"
)

// EncodeBytes writes bytes for a JSON text field: valid UTF-8 as it is
// (encoding ""), anything else as base64 (encoding "base64"). Every
// producer of byte content on the wire uses it.
func EncodeBytes(b []byte) (data, encoding string) {
	if utf8.Valid(b) {
		return string(b), ""
	}
	return base64.StdEncoding.EncodeToString(b), EncodingBase64
}

// DecodeBytes reads what EncodeBytes wrote, given the encoding field:
// "" or "utf-8" is the text itself, "base64" is decoded, and bad base64 or
// an unknown encoding is an error, never raw bytes passed off as decoded.
func DecodeBytes(data, encoding string) ([]byte, error) {
	switch encoding {
	case "", EncodingUTF8:
		return []byte(data), nil
	case EncodingBase64:
		b, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			return nil, fmt.Errorf("not valid base64: %v", err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("encoding %q: use \"utf-8\" (default) or \"base64\"", encoding)
}
