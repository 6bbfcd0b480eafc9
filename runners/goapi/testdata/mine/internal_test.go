package mine

import "testing"

func TestInternalExported(t *testing.T) {
	if Double(Double(1)) != 4 {
		t.Error("four expected")
	}
}

func TestInternalSecret(t *testing.T) {
	if Double(secret()) != 84 {
		t.Error("84 expected")
	}
}

func TestInternalHidden(t *testing.T) {
	if plusHidden(Double(1)) != 5 {
		t.Error("5 expected")
	}
}
