package datatype

// bounds accumulates the bounds and size of a layout made of placed copies
// of child layouts, with overflow checking.
type bounds struct {
	c        checked
	any      bool // some placement made (lb, ub valid)
	anyTrue  bool // some non-empty placement made (tlb, tub valid)
	lb, ub   int
	tlb, tub int
	size     int
	align    int
}

func newBounds() bounds { return bounds{c: checked{ok: true}, align: 1} }

// place adds reps ≥ 1 consecutive copies of child (one extent apart), the
// first at byte displacement disp.
func (b *bounds) place(child *desc, disp, reps int) {
	ext := child.ub - child.lb
	span := b.c.mul(reps-1, ext)
	lo := b.c.add(disp, child.lb)
	hi := b.c.add(b.c.add(disp, child.ub), span)
	if !b.any || lo < b.lb {
		b.lb = lo
	}
	if !b.any || hi > b.ub {
		b.ub = hi
	}
	b.any = true
	b.align = max(b.align, child.align)
	b.size = b.c.add(b.size, b.c.mul(reps, child.size))
	if child.empty {
		return
	}
	tlo := b.c.add(disp, child.tlb)
	thi := b.c.add(b.c.add(disp, child.tub), span)
	if !b.anyTrue || tlo < b.tlb {
		b.tlb = tlo
	}
	if !b.anyTrue || thi > b.tub {
		b.tub = thi
	}
	b.anyTrue = true
}

// fill sets d's bounds from b, or returns an overflow error.
func (b *bounds) fill(d *desc, op string, arg string, v int) error {
	if !b.c.ok || !inRange(b.ub-b.lb) {
		return overflow(op, arg, v)
	}
	d.lb, d.ub, d.tlb, d.tub, d.size, d.align = b.lb, b.ub, b.tlb, b.tub, b.size, b.align
	return nil
}

func checkType(op, arg string, t Type) error {
	if t.d == nil {
		return &ArgError{Op: op, Arg: arg, Reason: "zero Type", Err: ErrInvalidType}
	}
	return nil
}

func nonNegative(op, arg string, v int) error {
	if v < 0 {
		return badArg(op, arg, v, "must not be negative")
	}
	if v > limit {
		return overflow(op, arg, v)
	}
	return nil
}

func inLimit(op, arg string, v int) error {
	if !inRange(v) {
		return overflow(op, arg, v)
	}
	return nil
}

// Contiguous returns count copies of t laid end to end, one extent apart.
func Contiguous(count int, t Type) (Type, error) {
	const op = "Contiguous"
	if err := checkType(op, "t", t); err != nil {
		return Type{}, err
	}
	if err := nonNegative(op, "count", count); err != nil {
		return Type{}, err
	}
	d := &desc{kind: kContiguous, count: count, children: []Type{t}, elem: t.d.elem}
	b := newBounds()
	if count > 0 {
		b.place(t.d, 0, count)
	}
	if err := b.fill(d, op, "count", count); err != nil {
		return Type{}, err
	}
	d.align = t.d.align
	d.items = repeat(t.d.items, count, t.Extent())
	d.finish()
	return Type{d}, nil
}

// Vector returns count blocks of blocklen copies of t each, the blocks
// stride extents of t apart (stride may be negative): MPI_Type_vector. The
// column of a row-major matrix of float32 with n columns is
// Vector(rows, 1, n, Float32); every other cell of a row is
// Vector(cells, 1, 2, Float32).
func Vector(count, blocklen, stride int, t Type) (Type, error) {
	const op = "Vector"
	if err := checkType(op, "t", t); err != nil {
		return Type{}, err
	}
	if err := inLimit(op, "stride", stride); err != nil {
		return Type{}, err
	}
	bytes, ok := mul(stride, t.Extent())
	if !ok {
		return Type{}, overflow(op, "stride", stride)
	}
	return hvector(op, kVector, count, blocklen, stride, bytes, t)
}

// Hvector is Vector with the stride in bytes: MPI_Type_create_hvector.
func Hvector(count, blocklen, strideBytes int, t Type) (Type, error) {
	const op = "Hvector"
	if err := checkType(op, "t", t); err != nil {
		return Type{}, err
	}
	if err := inLimit(op, "strideBytes", strideBytes); err != nil {
		return Type{}, err
	}
	return hvector(op, kHvector, count, blocklen, strideBytes, strideBytes, t)
}

func hvector(op string, k kind, count, blocklen, stride, strideBytes int, t Type) (Type, error) {
	if err := nonNegative(op, "count", count); err != nil {
		return Type{}, err
	}
	if err := nonNegative(op, "blocklen", blocklen); err != nil {
		return Type{}, err
	}
	d := &desc{kind: k, count: count, blocklen: blocklen, stride: stride, children: []Type{t}, elem: t.d.elem}
	b := newBounds()
	if count > 0 && blocklen > 0 {
		b.place(t.d, 0, blocklen)
		last := b.c.mul(count-1, strideBytes)
		b.place(t.d, last, blocklen)
		// Both placements added the block's size; count blocks in all.
		b.size = b.c.mul(count, b.c.mul(blocklen, t.d.size))
	}
	if err := b.fill(d, op, "count", count); err != nil {
		return Type{}, err
	}
	d.align = t.d.align
	block := repeat(t.d.items, blocklen, t.Extent())
	d.items = repeat(block, count, strideBytes)
	d.finish()
	return Type{d}, nil
}

// Indexed returns blocks of blocklens[i] copies of t at displacements
// displs[i], counted in extents of t: MPI_Type_indexed. Displacements may
// be negative, out of order, or overlap (overlapping blocks must not be
// unpacked into: the later block's bytes win).
func Indexed(blocklens, displs []int, t Type) (Type, error) {
	const op = "Indexed"
	if err := checkType(op, "t", t); err != nil {
		return Type{}, err
	}
	if len(blocklens) != len(displs) {
		return Type{}, badArg(op, "len(displs)", len(displs), "must equal len(blocklens)")
	}
	return indexed(op, kIndexed, blocklens, 0, displs, t)
}

// IndexedBlock is Indexed with one block length for all blocks:
// MPI_Type_create_indexed_block. The red cells of a red-black grid row are
// IndexedBlock(1, []int{0, 2, 4, ...}, Float32), which compiles to the same
// strided run as Vector(n, 1, 2, Float32).
func IndexedBlock(blocklen int, displs []int, t Type) (Type, error) {
	const op = "IndexedBlock"
	if err := checkType(op, "t", t); err != nil {
		return Type{}, err
	}
	if err := nonNegative(op, "blocklen", blocklen); err != nil {
		return Type{}, err
	}
	return indexed(op, kIndexedBlock, nil, blocklen, displs, t)
}

func indexed(op string, k kind, blocklens []int, blocklen int, displs []int, t Type) (Type, error) {
	ext := t.Extent()
	d := &desc{kind: k, blocklen: blocklen, children: []Type{t}, elem: t.d.elem}
	if blocklens != nil {
		d.blocklens = append([]int(nil), blocklens...)
	}
	d.displs = append([]int(nil), displs...)
	b := newBounds()
	lists := make([][]item, 0, len(displs))
	for i, disp := range displs {
		bl := blocklen
		if blocklens != nil {
			bl = blocklens[i]
			if err := nonNegative(op, "blocklens["+itoa(i)+"]", bl); err != nil {
				return Type{}, err
			}
		}
		if err := inLimit(op, "displs["+itoa(i)+"]", disp); err != nil {
			return Type{}, err
		}
		bytes, ok := mul(disp, ext)
		if !ok {
			return Type{}, overflow(op, "displs["+itoa(i)+"]", disp)
		}
		if bl == 0 {
			continue
		}
		b.place(t.d, bytes, bl)
		if !b.c.ok {
			return Type{}, overflow(op, "displs["+itoa(i)+"]", disp)
		}
		lists = append(lists, shift(repeat(t.d.items, bl, ext), bytes))
	}
	if err := b.fill(d, op, "len(displs)", len(displs)); err != nil {
		return Type{}, err
	}
	d.align = t.d.align
	d.items = concat(lists...)
	d.finish()
	return Type{d}, nil
}

// Subarray returns the sub-block subsizes of an n-dimensional array of t
// with dimensions sizes, starting at index starts, in C (row-major) order:
// MPI_Type_create_subarray with MPI_ORDER_C. Its lower bound is 0 and its
// extent the whole array, so consecutive instances are consecutive arrays.
// Every size must be positive, every subsize and start non-negative, and
// starts[i]+subsizes[i] ≤ sizes[i].
func Subarray(sizes, subsizes, starts []int, t Type) (Type, error) {
	const op = "Subarray"
	if err := checkType(op, "t", t); err != nil {
		return Type{}, err
	}
	n := len(sizes)
	if n == 0 {
		return Type{}, badArg(op, "len(sizes)", 0, "must be at least 1")
	}
	if len(subsizes) != n {
		return Type{}, badArg(op, "len(subsizes)", len(subsizes), "must equal len(sizes)")
	}
	if len(starts) != n {
		return Type{}, badArg(op, "len(starts)", len(starts), "must equal len(sizes)")
	}
	for i := range n {
		if sizes[i] < 1 {
			return Type{}, badArg(op, "sizes["+itoa(i)+"]", sizes[i], "must be positive")
		}
		if err := nonNegative(op, "subsizes["+itoa(i)+"]", subsizes[i]); err != nil {
			return Type{}, err
		}
		if err := nonNegative(op, "starts["+itoa(i)+"]", starts[i]); err != nil {
			return Type{}, err
		}
		if starts[i] > sizes[i]-subsizes[i] {
			return Type{}, badArg(op, "starts["+itoa(i)+"]", starts[i],
				"start plus subsize exceeds size "+itoa(sizes[i]))
		}
	}
	d := &desc{kind: kSubarray, children: []Type{t}, elem: t.d.elem,
		sizes: append([]int(nil), sizes...), subsizes: append([]int(nil), subsizes...),
		starts: append([]int(nil), starts...)}
	// strides[i] is the byte distance between consecutive indices of
	// dimension i.
	c := checked{ok: true}
	ext := t.Extent()
	strides := make([]int, n)
	s := ext
	for i := n - 1; i >= 0; i-- {
		strides[i] = s
		s = c.mul(s, sizes[i])
	}
	whole := s
	empty := false
	for _, ss := range subsizes {
		empty = empty || ss == 0
	}
	b := newBounds()
	if !empty {
		// The corner blocks of the sub-block bound it.
		first, last := 0, 0
		for i := range n {
			first = c.add(first, c.mul(starts[i], strides[i]))
			last = c.add(last, c.mul(starts[i]+subsizes[i]-1, strides[i]))
		}
		rowStart := c.add(last, -c.mul(subsizes[n-1]-1, strides[n-1]))
		b.place(t.d, first, subsizes[n-1])
		b.place(t.d, rowStart, subsizes[n-1])
		elems := 1
		for _, ss := range subsizes {
			elems = c.mul(elems, ss)
		}
		b.size = c.mul(elems, t.d.size)
	}
	if !c.ok {
		return Type{}, overflow(op, "sizes", len(sizes))
	}
	if err := b.fill(d, op, "sizes", len(sizes)); err != nil {
		return Type{}, err
	}
	d.lb, d.ub = 0, whole
	d.align = t.d.align
	if !empty {
		cur := shift(repeat(t.d.items, subsizes[n-1], ext), starts[n-1]*strides[n-1])
		for i := n - 2; i >= 0; i-- {
			cur = shift(repeat(cur, subsizes[i], strides[i]), starts[i]*strides[i])
		}
		d.items = cur
	}
	d.finish()
	return Type{d}, nil
}

// Struct returns blocks of blocklens[i] copies of types[i] at byte
// displacements byteDispls[i]: MPI_Type_create_struct. As in C, the extent
// is rounded up to a multiple of the largest alignment of the members, so
// Struct describing a Go struct's fields has that struct's size. A Struct
// whose members differ in element type has no single element type (Elem
// returns nil) and packs from and into []byte buffers.
func Struct(blocklens, byteDispls []int, types []Type) (Type, error) {
	const op = "Struct"
	if len(byteDispls) != len(blocklens) {
		return Type{}, badArg(op, "len(byteDispls)", len(byteDispls), "must equal len(blocklens)")
	}
	if len(types) != len(blocklens) {
		return Type{}, badArg(op, "len(types)", len(types), "must equal len(blocklens)")
	}
	d := &desc{kind: kStruct,
		blocklens: append([]int(nil), blocklens...), displs: append([]int(nil), byteDispls...),
		children: append([]Type(nil), types...)}
	b := newBounds()
	lists := make([][]item, 0, len(types))
	for i, t := range types {
		if err := checkType(op, "types["+itoa(i)+"]", t); err != nil {
			return Type{}, err
		}
		if i == 0 {
			d.elem = t.d.elem
		} else if d.elem != t.d.elem {
			d.elem = nil
		}
		b.align = max(b.align, t.d.align)
		if err := nonNegative(op, "blocklens["+itoa(i)+"]", blocklens[i]); err != nil {
			return Type{}, err
		}
		if err := inLimit(op, "byteDispls["+itoa(i)+"]", byteDispls[i]); err != nil {
			return Type{}, err
		}
		if blocklens[i] == 0 {
			continue
		}
		b.place(t.d, byteDispls[i], blocklens[i])
		if !b.c.ok {
			return Type{}, overflow(op, "byteDispls["+itoa(i)+"]", byteDispls[i])
		}
		lists = append(lists, shift(repeat(t.d.items, blocklens[i], t.Extent()), byteDispls[i]))
	}
	if b.any {
		ext := b.ub - b.lb
		if r := ext % b.align; r != 0 {
			b.ub = b.c.add(b.ub, b.align-r)
		}
	}
	if err := b.fill(d, op, "len(blocklens)", len(blocklens)); err != nil {
		return Type{}, err
	}
	d.items = concat(lists...)
	d.finish()
	return Type{d}, nil
}

// Resized returns t with its lower bound set to lb and its extent to
// extent ≥ 0 (MPI_Type_create_resized): the same bytes, packed in the same
// order, but instances of a count now repeat every extent bytes. It turns,
// for example, a matrix column into a type whose consecutive instances are
// consecutive columns (Resized(column, 0, 4)).
func Resized(t Type, lb, extent int) (Type, error) {
	const op = "Resized"
	if err := checkType(op, "t", t); err != nil {
		return Type{}, err
	}
	if err := inLimit(op, "lb", lb); err != nil {
		return Type{}, err
	}
	if err := nonNegative(op, "extent", extent); err != nil {
		return Type{}, err
	}
	ub, ok := add(lb, extent)
	if !ok {
		return Type{}, overflow(op, "extent", extent)
	}
	c := t.d
	d := &desc{kind: kResized, resLB: lb, resExtent: extent, children: []Type{t}, elem: c.elem,
		size: c.size, lb: lb, ub: ub, tlb: c.tlb, tub: c.tub, align: c.align, items: c.items}
	d.finish()
	return Type{d}, nil
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var buf [20]byte
	p := len(buf)
	neg := i < 0
	if neg {
		i = -i
	}
	for i > 0 {
		p--
		buf[p] = byte('0' + i%10)
		i /= 10
	}
	if neg {
		p--
		buf[p] = '-'
	}
	return string(buf[p:])
}
