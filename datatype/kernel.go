package datatype

import "unsafe"

// moveRuns copies reps runs of n bytes between the packed buffer buf (runs
// back to back from buf[0]) and mem (runs at at, at+stride, ...): from mem
// to buf when pack is true, the other way otherwise.
//
// The caller guarantees the bounds: len(buf) ≥ reps*n, and every run lies
// in mem, that is at ≥ 0, at+(reps-1)*stride ≥ 0 and both ends plus n ≤
// len(mem). Pack, Unpack and the streaming types establish this for the
// whole layout before moving the first byte.
func moveRuns(buf, mem []byte, at, stride, n, reps int, pack bool) {
	if reps <= 0 {
		return
	}
	// Safety: runs of n bytes in small power-of-two sizes move as [n]byte
	// values through unsafe pointers, one load and one store each with no
	// bounds check. Every pointer formed points at the start of a run that
	// the caller has checked lies wholly inside buf or mem (see above), and
	// [n]byte has alignment 1, so no alignment is assumed.
	b := unsafe.Pointer(unsafe.SliceData(buf))
	m := unsafe.Add(unsafe.Pointer(unsafe.SliceData(mem)), at)
	switch n {
	case 1:
		words[[1]byte](b, m, stride, reps, pack)
	case 2:
		words[[2]byte](b, m, stride, reps, pack)
	case 4:
		if pack && stride == 8 {
			k := packEvens(b, m, reps, 4)
			b, m, reps = unsafe.Add(b, k*4), unsafe.Add(m, k*8), reps-k
		}
		words[[4]byte](b, m, stride, reps, pack)
	case 8:
		if pack && stride == 16 {
			k := packEvens(b, m, reps, 8)
			b, m, reps = unsafe.Add(b, k*8), unsafe.Add(m, k*16), reps-k
		}
		words[[8]byte](b, m, stride, reps, pack)
	case 16:
		words[[16]byte](b, m, stride, reps, pack)
	default:
		if pack {
			for r := range reps {
				o := at + r*stride
				copy(buf[r*n:r*n+n], mem[o:o+n])
			}
		} else {
			for r := range reps {
				o := at + r*stride
				copy(mem[o:o+n], buf[r*n:r*n+n])
			}
		}
	}
}

// words moves reps values of the array type W (W is [n]byte) between the
// packed run at b and the strided runs at m, m+stride, ...
//
// Safety: as for moveRuns; the caller has checked that reps values starting
// at b and reps values starting at m, m+stride, ... lie in their buffers.
func words[W any](b, m unsafe.Pointer, stride, reps int, pack bool) {
	w := int(unsafe.Sizeof(*(*W)(b)))
	if pack {
		for r := range reps {
			*(*W)(unsafe.Add(b, r*w)) = *(*W)(unsafe.Add(m, r*stride))
		}
		return
	}
	for r := range reps {
		*(*W)(unsafe.Add(m, r*stride)) = *(*W)(unsafe.Add(b, r*w))
	}
}

// moveBytes copies k bytes between buf[0:k] and mem[at:at+k].
func moveBytes(buf, mem []byte, at, k int, pack bool) {
	if pack {
		copy(buf[:k], mem[at:at+k])
	} else {
		copy(mem[at:at+k], buf[:k])
	}
}

// xfer moves the packed bytes [skip, skip+len(buf)) of the item list placed
// at byte base of mem, between mem and buf, and returns how many bytes it
// moved: len(buf), or less if the list holds fewer than skip+len(buf).
// Bounds have been checked by the caller for the whole layout.
func xfer(items []item, base, skip int, buf, mem []byte, pack bool) int {
	done := 0
	for i := range items {
		it := &items[i]
		if sz := it.count * it.n; skip >= sz {
			skip -= sz
			continue
		}
		r := skip / it.n
		within := skip - r*it.n
		skip = 0
		at := base + it.off + r*it.stride
		if it.body != nil {
			for ; r < it.count; r++ {
				done += xfer(it.body, at, within, buf[done:], mem, pack)
				if done == len(buf) {
					return done
				}
				within = 0
				at += it.stride
			}
			continue
		}
		if within > 0 {
			// Finish a run a previous chunk began.
			k := min(it.n-within, len(buf)-done)
			moveBytes(buf[done:], mem, at+within, k, pack)
			done += k
			if done == len(buf) {
				return done
			}
			r++
			at += it.stride
		}
		if full := min(it.count-r, (len(buf)-done)/it.n); full > 0 {
			moveRuns(buf[done:], mem, at, it.stride, it.n, full, pack)
			done += full * it.n
			r += full
			at += full * it.stride
		}
		if r < it.count && done < len(buf) {
			// Begin a run the next chunk finishes.
			k := len(buf) - done
			moveBytes(buf[done:], mem, at, k, pack)
			return len(buf)
		}
		if done == len(buf) {
			return done
		}
	}
	return done
}
