package main

import (
	"math/rand/v2"
	"testing"
)

// TestMixerDealsTheSeedMix: every window of 50 picks, from any phase, holds
// exactly 20 acquires, 20 releases, 4 keepalives, 3 reads and 3 try-locks, and a
// release never runs more than one ahead of the acquires.
func TestMixerDealsTheSeedMix(t *testing.T) {
	total := 0
	for _, w := range seedMix {
		total += w
	}
	if total != 50 {
		t.Fatalf("seed mix weights add up to %d, want 50", total)
	}
	for phase := 0; phase < total; phase++ {
		m := newMixer(seedMix, phase)
		picks := make([]kind, 10*total)
		drift, maxDrift := 0, 0
		for i := range picks {
			picks[i] = m.next()
			switch picks[i] {
			case kRelease:
				drift++
			case kAcquire:
				drift--
			}
			maxDrift = max(maxDrift, drift)
		}
		if maxDrift > 1 {
			t.Errorf("phase %d: releases ran %d ahead of acquires", phase, maxDrift)
		}
		for start := 0; start+total <= len(picks); start++ {
			var got [numKinds]int
			for _, k := range picks[start : start+total] {
				got[k]++
			}
			if got != seedMix {
				t.Fatalf("phase %d, window at %d: %v, want %v", phase, start, got, seedMix)
			}
		}
	}
	// Percentages, as the seed states them.
	want := map[kind]float64{kAcquire: 0.40, kRelease: 0.40, kKeepalive: 0.08, kRead: 0.06, kTrylock: 0.06}
	for k, share := range want {
		if got := float64(seedMix[k]) / float64(total); got != share {
			t.Errorf("%s: %.2f of the mix, want %.2f", k, got, share)
		}
	}
}

func TestPlanMixedWithoutLocksFallsBackToAcquire(t *testing.T) {
	m := newMixer(seedMix, 0)
	plan, fallbacks := planMixed(m, 0, 50, func(int) int { panic("no lock to pick") })
	for _, s := range plan {
		if s.kind != kAcquire || s.held != -1 {
			t.Fatalf("with no lock held, planned %+v", s)
		}
	}
	if fallbacks != 30 {
		t.Errorf("fallbacks %d, want 30 (the 50-slot mix minus its 20 acquires)", fallbacks)
	}
}

// TestPlanMixedSimulated runs the planner as a client does (the pool the
// client takes first, batches of -pipeline slots, releases of the oldest
// locks) and checks that no slot falls back, every slot names a lock it may
// use, and the mix dealt is the seed's.
func TestPlanMixedSimulated(t *testing.T) {
	for _, pipeline := range []int{1, 2, 4, 16, 64} {
		for phase := 0; phase < 50; phase += 7 {
			m := newMixer(seedMix, phase)
			rng := rand.New(rand.NewPCG(uint64(pipeline), uint64(phase)))
			held := mixedPool(pipeline)
			var got [numKinds]int
			ops := 0
			for ops < 50*1000 || ops%50 != 0 { // whole windows of the mix
				plan, fallbacks := planMixed(m, held, pipeline, rng.IntN)
				if fallbacks != 0 {
					t.Fatalf("pipeline %d phase %d: %d fallbacks with %d locks held", pipeline, phase, fallbacks, held)
				}
				if len(plan) != pipeline {
					t.Fatalf("planned %d slots, want %d", len(plan), pipeline)
				}
				released, acquired := 0, 0
				for _, s := range plan {
					got[s.kind]++
					switch s.kind {
					case kAcquire:
						acquired++
					case kRelease:
						if s.held != released {
							t.Fatalf("release of lock %d, want the oldest not yet released, %d", s.held, released)
						}
						released++
					default:
						if s.held < released || s.held >= held {
							t.Fatalf("%s of lock %d: released %d of %d held", s.kind, s.held, released, held)
						}
					}
				}
				held += acquired - released
				ops += len(plan)
			}
			for k := kind(0); k < numKinds; k++ {
				if want := seedMix[k] * ops / 50; got[k] != want {
					t.Errorf("pipeline %d phase %d: %d %s of %d, want %d", pipeline, phase, got[k], k, ops, want)
				}
			}
		}
	}
}
