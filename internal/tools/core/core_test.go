package core

import "testing"

func TestRegistry(t *testing.T) {
	r, err := Registry()
	if err != nil {
		t.Fatal(err)
	}
	names := r.Names()
	if len(names) != len(Order) {
		t.Fatalf("names = %v, want %v", names, Order)
	}
	for i := range Order {
		if names[i] != Order[i] {
			t.Errorf("names[%d] = %s, want %s", i, names[i], Order[i])
		}
	}
}
