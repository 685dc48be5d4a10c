// Package datatype describes where the data of a message lies in memory,
// and moves it between that layout and the packed byte stream a message
// carries: MPI's derived datatypes with a typed Go face.
//
// # Vocabulary
//
// An element type is a Go fixed-size value type (integers, floats,
// complex numbers, bools, and arrays and structs of them); Of[T] maps T to
// a Type. A layout is a Type built from element types by the constructors
// Contiguous, Vector, Hvector, Indexed, IndexedBlock, Subarray, Struct and
// Resized, nested to any depth. Displacements are measured from the first
// byte of the buffer passed with the layout: a send of a layout over a
// []T starts at the slice's first element, as an MPI send starts at its
// buffer pointer.
//
// Every layout has a Size (the bytes one instance packs into), bounds
// LowerBound and UpperBound whose difference is the Extent (the distance
// from one instance to the next in a count), and true bounds (the bytes
// actually touched). Packing count instances concatenates their bytes in
// layout order; unpacking writes them back; bytes outside the layout are
// neither read into the stream nor written.
//
// # Layouts
//
// The drawings show a row-major grid of float32 cells. Cells marked x
// belong to the layout; the number beneath a cell is its position in the
// packed stream.
//
// A column of an m×n matrix, Vector(m, 1, n, Float32), here m = 4, n = 5:
//
//	     col 0  1  2  3  4
//	row 0  [ .  x  .  .  . ]     stride n = 5 cells between blocks,
//	row 1  [ .  x  .  .  . ]     one cell per block,
//	row 2  [ .  x  .  .  . ]     buffer starts at row 0, column 1
//	row 3  [ .  x  .  .  . ]
//	packed:    0,1,2,3
//
// Resized(column, 0, 4) keeps the cells but sets the extent to one cell,
// so count = n instances are the n columns in turn: packing them
// transposes the matrix.
//
// The red cells of one row of a red-black SOR grid (Snir 2009 §4.3),
// Vector((N+1)/2, 1, 2, Float32) sent from a[i][fred^color], and the black
// cells, Vector(N/2, 1, 2, Float32) sent from the other cell:
//
//	cell    0   1   2   3   4   5   6   7   8   9
//	row i [ R   B   R   B   R   B   R   B   R   B ]
//	red     x       x       x       x       x         packed: 0 1 2 3 4
//	black       x       x       x       x       x     packed: 0 1 2 3 4
//
// Each compiles to one strided run, {offset 0, 5 runs of 4 bytes, 8 bytes
// apart}, which the packer moves with a vector kernel where the machine has
// one (AVX2 on amd64) and a word-at-a-time loop elsewhere.
//
// The 2×3 interior block of a 4×5 array, Subarray([]int{4, 5},
// []int{2, 3}, []int{1, 1}, Float32):
//
//	     col 0  1  2  3  4
//	row 0  [ .  .  .  .  . ]
//	row 1  [ .  x  x  x  . ]     packed 0 1 2   (one 12-byte run)
//	row 2  [ .  x  x  x  . ]     packed 3 4 5   (one 12-byte run)
//	row 3  [ .  .  .  .  . ]
//
// Its extent is the whole array (80 bytes), so consecutive instances are
// consecutive arrays. A halo exchange sends the first or last row or
// column of such a block; a Subarray whose rows are whole rows of the array
// is contiguous.
//
// A Go struct, Of[struct{ V float64; K int32 }], is one element of 16
// bytes, 4 of them padding; Struct([]int{1, 1}, []int{0, 8},
// []Type{Float64, Int32}) describes the same fields as a layout of 12 data
// bytes with extent 16:
//
//	byte    0               8       12      16
//	       [ V  V  V  V  V  V  V  V  K  K  K  K  p  p  p  p ]
//	Of     |<------------------ one 16-byte run ------------>|
//	Struct |<--------- one 12-byte run ---------->|
//
// # Compiled runs
//
// Each Type is compiled once, when it is built, into a short tree of
// items: a leaf is count runs of n bytes at a fixed stride; a loop repeats
// a body of items at a fixed stride. Adjacent runs merge, and a repeated
// run becomes one strided leaf, so Vector(1_000_000, 1, 2, Float32) is a
// single item: memory stays bounded whatever the counts, and packing costs
// a loop over runs, not an interpretation of the type per element. The
// runs themselves are visible through Runs (for scatter/gather I/O).
//
// # Zero copy
//
// Bytes views a []T as a []byte sharing its memory. When a layout
// IsContiguous, count instances are a single run and ContiguousView returns
// that run of the caller's buffer: a send needs no copy at all, which is
// the path the typed communicators take for plain slices.
//
// # Streaming
//
// Packer and Unpacker move count instances in pieces: Read fills the next
// chunk (an eager packet's payload) and Write drains the next chunk that
// arrived. Their position is a byte offset into the packed stream;
// resuming at any offset costs a walk down the compiled tree, not a replay
// of the bytes before it.
//
// # Checking
//
// Bounds are checked before any byte moves: a layout that would step
// before the buffer's start or past its end (ErrOutOfBounds), a packed
// buffer that is too short (ErrShortBuffer), a negative count or length
// (ErrBadArgument) and sizes that overflow (ErrOverflow) are refused with
// a struct error carrying the numbers, and nothing is written. The typed
// functions (PackSlice, UnpackSlice, CheckElem) refuse a []T whose T is not
// the layout's element type (ErrElemMismatch). Pack, Unpack, the streaming
// types and the typed functions do not allocate.
//
// Data travels in the machine's byte order, padding included; both sides
// of a transfer must share the layout of their element types, which
// Signature describes.
package datatype
