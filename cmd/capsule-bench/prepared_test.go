package main

import "testing"

func TestPreparation(t *testing.T) {
	log := "2026-12-03T14:00:00.000Z [INFO]  capsule: runtime prepared: language=javascript duration=700ms worker=650ms worker_cpu=1.1s store_and_seal=50ms\n" +
		"2026-12-03T14:00:04.000Z [INFO]  capsule: runtime prepared: language=python duration=4.5s worker=4.3s worker_cpu=8.9s store_and_seal=200ms\n"
	p, ok := preparation(log, "python")
	if !ok || p != (preparedRow{total: 4500, worker: 4300, workerCPU: 8900, seal: 200}) {
		t.Errorf("preparation = %+v %v", p, ok)
	}
	if _, ok := preparation("no such line", "python"); ok {
		t.Error("found a preparation in a log without one")
	}
}
