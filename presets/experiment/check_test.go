package experiment

import (
	"math"
	"strings"
	"testing"
)

func TestCheckErrorAndWithin(t *testing.T) {
	c := Check{Ref: 10, Pimtui: 10.9, Tol: 0.10}
	if e := c.Error(); math.Abs(e-0.09) > 1e-12 {
		t.Fatalf("error %v, want 0.09", e)
	}
	if !c.Within() {
		t.Fatal("9% off with a ±10% tolerance is within")
	}
	c.Pimtui = 8.9
	if c.Within() {
		t.Fatal("11% under with a ±10% tolerance is not within")
	}
	if (Check{Pimtui: 1, Tol: 1}).Within() {
		t.Fatal("a check without a reference figure is never within")
	}
}

func TestValidationsUnknownReference(t *testing.T) {
	_, err := Validations("no-such-reference")
	if err == nil || !strings.Contains(err.Error(), `no reference "no-such-reference"`) {
		t.Fatalf("err = %v, want it to name the unknown reference", err)
	}
}

func TestDescribe(t *testing.T) {
	if r := Describe("neupims-sim"); r.Name != "neupims-sim" || !strings.Contains(r.Title, "NeuPIMs authors' cycle-level simulator") || r.Short != "authors' simulator" {
		t.Fatalf("neupims-sim: %+v", r)
	}
	if r := Describe("elsewhere"); r.Title != "elsewhere" || r.Short != "elsewhere" {
		t.Fatalf("an undescribed reference: %+v", r)
	}
}
