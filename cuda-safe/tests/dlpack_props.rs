//! Property tests of the stride arithmetic: spans match the addresses the elements really
//! have, slices and permutations stay inside the original span, reshapes round-trip, and no
//! input makes a constructor panic.

use cuda_safe::Error;
use cuda_safe::dlpack::{DLDataType, StridedMemoryView, ViewDevice};
use proptest::prelude::*;

/// Bytes either side of the arena's middle: more than any view below reaches (5 axes of
/// reach 5 * 20 elements of 16 bytes).
const HALF: usize = 16 * 1024;

/// Where the views of these tests start: the middle of a live, never-read arena.
fn arena_middle(arena: &[u8]) -> u64 {
    arena.as_ptr() as u64 + HALF as u64
}

fn dtypes() -> impl Strategy<Value = DLDataType> {
    prop::sample::select(vec![
        DLDataType::I8,
        DLDataType::I16,
        DLDataType::F32,
        DLDataType::F64,
        DLDataType::C128,
    ])
}

/// Shapes of up to 5 axes of 0..6 with strides in -20..=20 (elements).
fn layouts() -> impl Strategy<Value = (Vec<i64>, Vec<i64>)> {
    layouts_of(0..=5)
}

/// As [`layouts`], with a number of axes in `axes`.
fn layouts_of(
    axes: std::ops::RangeInclusive<usize>,
) -> impl Strategy<Value = (Vec<i64>, Vec<i64>)> {
    prop::collection::vec((0i64..6, -20i64..=20), axes).prop_map(|axes| axes.into_iter().unzip())
}

fn view_at(
    ptr: u64,
    shape: &[i64],
    strides: Option<&[i64]>,
    dtype: DLDataType,
) -> StridedMemoryView {
    // SAFETY: every view reaches only arena bytes (see HALF), and nothing is read through it.
    unsafe { StridedMemoryView::from_raw_parts(ptr, shape, strides, dtype, ViewDevice::Host, None) }
        .expect("a valid layout")
}

/// The byte address of every element, in row-major index order.
fn addresses(view: &StridedMemoryView) -> Vec<i64> {
    let mut out = Vec::new();
    if view.is_empty() {
        return out;
    }
    let mut index = vec![0i64; view.ndim()];
    loop {
        let offset: i64 = index.iter().zip(view.strides()).map(|(i, s)| i * s).sum();
        out.push(view.ptr() as i64 + offset * view.item_size() as i64);
        let mut axis = view.ndim();
        loop {
            if axis == 0 {
                return out;
            }
            axis -= 1;
            index[axis] += 1;
            if index[axis] < view.shape()[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
}

/// `[low, high)` in absolute bytes.
fn absolute_span(view: &StridedMemoryView) -> (i64, i64) {
    let (low, high) = view.byte_span();
    (view.ptr() as i64 + low, view.ptr() as i64 + high)
}

proptest! {
    // Failures print their minimal input; nothing is written into the source tree.
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn span_is_exactly_what_the_elements_cover((shape, strides) in layouts(), dtype in dtypes()) {
        let arena = vec![0u8; 2 * HALF];
        let view = view_at(arena_middle(&arena), &shape, Some(&strides), dtype);
        let addresses = addresses(&view);
        prop_assert_eq!(addresses.len(), view.len());
        if let (Some(&min), Some(&max)) = (addresses.iter().min(), addresses.iter().max()) {
            prop_assert_eq!(absolute_span(&view), (min, max + view.item_size() as i64));
        } else {
            prop_assert_eq!(view.byte_span(), (0, 0));
        }
    }

    #[test]
    fn slices_stay_inside_the_original_span(
        (shape, strides) in layouts_of(1..=5),
        dtype in dtypes(),
        axis_seed in any::<usize>(),
        start_seed in any::<usize>(),
        len_seed in any::<usize>(),
    ) {
        let arena = vec![0u8; 2 * HALF];
        let view = view_at(arena_middle(&arena), &shape, Some(&strides), dtype);
        let axis = axis_seed % shape.len();
        let extent = shape[axis] as usize;
        let start = start_seed % (extent + 1);
        let end = start + len_seed % (extent - start + 1);
        let slice = view.slice(axis, start..end).unwrap();
        prop_assert_eq!(slice.shape()[axis] as usize, end - start);
        let inner = addresses(&slice);
        let outer = addresses(&view);
        prop_assert!(inner.iter().all(|address| outer.contains(address)));
        if !slice.is_empty() {
            let (low, high) = absolute_span(&slice);
            let (outer_low, outer_high) = absolute_span(&view);
            prop_assert!(outer_low <= low && high <= outer_high);
        }
    }

    #[test]
    fn permutations_keep_the_elements(
        (shape, strides) in layouts(),
        dtype in dtypes(),
        order in Just(()).prop_perturb(|_, mut rng| {
            let mut axes: Vec<usize> = (0..5).collect();
            for i in (1..axes.len()).rev() {
                axes.swap(i, rng.random_range(0..=i));
            }
            axes
        }),
    ) {
        let arena = vec![0u8; 2 * HALF];
        let view = view_at(arena_middle(&arena), &shape, Some(&strides), dtype);
        let axes: Vec<usize> = order.into_iter().filter(|&axis| axis < shape.len()).collect();
        let permuted = view.permute(&axes).unwrap();
        prop_assert_eq!(permuted.byte_span(), view.byte_span());
        prop_assert_eq!(permuted.len(), view.len());
        let (mut before, mut after) = (addresses(&view), addresses(&permuted));
        before.sort_unstable();
        after.sort_unstable();
        prop_assert_eq!(before, after);
        let back: Vec<usize> = (0..axes.len())
            .map(|axis| axes.iter().position(|&a| a == axis).unwrap())
            .collect();
        let restored = permuted.permute(&back).unwrap();
        prop_assert_eq!(restored.shape(), view.shape());
        prop_assert_eq!(restored.strides(), view.strides());
    }

    #[test]
    fn c_contiguous_reshapes_round_trip(shape in prop::collection::vec(0i64..6, 0..=5), dtype in dtypes()) {
        let arena = vec![0u8; 2 * HALF];
        let view = view_at(arena_middle(&arena), &shape, None, dtype);
        prop_assert!(view.is_c_contiguous());
        let flat = view.reshape(&[-1]).unwrap();
        prop_assert_eq!(flat.shape(), &[view.len() as i64][..]);
        let addresses = addresses(&flat);
        let item = view.item_size() as i64;
        prop_assert!(addresses.windows(2).all(|pair| pair[1] - pair[0] == item));
        let back = flat.reshape(&shape).unwrap();
        prop_assert_eq!(back.shape(), view.shape());
        prop_assert_eq!(back.strides(), view.strides());
        prop_assert_eq!(back.ptr(), view.ptr());
        if !view.is_empty() && shape.iter().filter(|&&extent| extent > 1).count() >= 2 {
            let (a, b) = {
                let mut big = (0..shape.len()).filter(|&axis| shape[axis] > 1);
                (big.next().unwrap(), big.next().unwrap())
            };
            let swapped = view.transpose(a, b).unwrap();
            prop_assert!(!swapped.is_c_contiguous());
            prop_assert!(matches!(swapped.reshape(&[-1]), Err(Error::InvalidArgument(_))));
        }
    }

    #[test]
    fn any_input_is_a_view_or_an_invalid_argument(
        shape in prop::collection::vec(any::<i64>(), 0..=4),
        strides in prop::collection::vec(any::<i64>(), 0..=4),
        ptr in any::<u64>(),
        dtype in dtypes(),
    ) {
        // SAFETY: nothing is ever read through these views; only their arithmetic is checked.
        let result = unsafe {
            StridedMemoryView::from_raw_parts(ptr, &shape, Some(&strides), dtype, ViewDevice::Host, None)
        };
        match result {
            Ok(view) => {
                prop_assert_eq!(view.shape(), &shape[..]);
                let (low, high) = view.byte_span();
                prop_assert!(low <= 0 && high >= 0);
                if !view.is_empty() {
                    prop_assert!(ptr.checked_add_signed(low).is_some());
                    prop_assert!(ptr.checked_add_signed(high).is_some());
                }
            }
            Err(error) => prop_assert!(matches!(error, Error::InvalidArgument(_)), "{error}"),
        }
    }
}
