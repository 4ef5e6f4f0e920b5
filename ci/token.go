package ci

import (
	"fmt"
	"io"
	"strings"
)

const redacted = "[redacted]"

// Token is a GitHub token. Its value can only be read inside this package:
// every way of printing or encoding it yields "[redacted]", so a Token
// embedded in a struct that ends up in a log, an error or a run record
// cannot leak. The value sits behind a pointer because fmt cannot call
// methods on unexported struct fields: a Token held in one prints as an
// address, not as the string.
type Token struct{ p *string }

// NewToken wraps a token value, trimming the newline a secret file or a
// heredoc usually adds.
func NewToken(v string) Token {
	v = strings.TrimSpace(v)
	return Token{p: &v}
}

// value is the only way to the token's text.
func (t Token) value() string {
	if t.p == nil {
		return ""
	}
	return *t.p
}

// Empty reports whether no token was given.
func (t Token) Empty() bool { return t.value() == "" }

func (t Token) String() string   { return redacted }
func (t Token) GoString() string { return redacted }

// Format covers every fmt verb, including %#v and %+v on enclosing structs.
func (t Token) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, redacted) }

func (t Token) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }
func (t Token) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// Redact replaces every occurrence of the token in s.
func (t Token) Redact(s string) string {
	v := t.value()
	if len(v) < 4 { // too short to be a real token; replacing would mangle text
		return s
	}
	return strings.ReplaceAll(s, v, redacted)
}

// RedactError returns err with every occurrence of the token removed from
// its text; nil stays nil. When the token was found, the result does not
// unwrap to the original: a caller reaching the original through
// errors.Unwrap would print the token again.
func (t Token) RedactError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if r := t.Redact(msg); r != msg {
		return redactedError(r)
	}
	return err
}

type redactedError string

func (e redactedError) Error() string { return string(e) }

// redactWriter guards a log stream: every write has the token removed.
// Writes are line-sized log messages, so a token split across two writes
// is not a concern.
type redactWriter struct {
	w io.Writer
	t Token
}

func (r redactWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(r.w, r.t.Redact(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
