package main

import "testing"

func TestPreparation(t *testing.T) {
	log := `{"@level":"info","@message":"runtime prepared","language":"python","variant":"sympy","duration_ms":3000,"worker_ms":2900,"worker_cpu_ms":2500,"store_and_seal_ms":100}` + "\n" +
		`{"@level":"info","@message":"runtime prepared","language":"javascript","duration_ms":700,"worker_ms":650,"worker_cpu_ms":1100,"store_and_seal_ms":50}` + "\n" +
		`{"@level":"info","@message":"execution","language":"python","duration_ms":3}` + "\n" +
		`{"@level":"info","@message":"runtime prepared","language":"python","duration_ms":4500,"worker_ms":4300,"worker_cpu_ms":8900,"store_and_seal_ms":200}` + "\n"
	p, ok := preparation(log, "python")
	if !ok || p != (preparedRow{total: 4500, worker: 4300, workerCPU: 8900, seal: 200}) {
		t.Errorf("preparation = %+v %v", p, ok)
	}
	if _, ok := preparation("no such line", "python"); ok {
		t.Error("found a preparation in a log without one")
	}
}
