//! [`VariantPack`]: the buffers an execution reads and writes, bound to a graph's tensors by
//! uid, each checked against its tensor before cuDNN is called.

use std::ffi::c_void;

use super::graph::Graph;
use super::tensor::{DataType, DnnElement, Tensor};
use crate::operand::{Input, Operand, Output};
use cuda_safe::ordering::MAX_FOREIGN;
use cuda_safe::{Error, Result, Stream};

/// The most buffers one execution binds (on at most
/// [`MAX_FOREIGN`](cuda_safe::ordering::MAX_FOREIGN) streams).
pub const MAX_BINDINGS: usize = 24;

/// The buffers of one execution: each of the graph's tensors with memory of the caller's
/// ([`Storage::Bound`](super::Storage::Bound)) bound to a buffer or view of `cuda-safe` whose
/// element type is the tensor's data type (constants passed by value and workspace tensors are
/// the handle's to bind). [`Dnn::execute`](super::Dnn::execute) checks, before cuDNN is called, that every such
/// tensor is bound once, that each buffer holds the tensor's span, is aligned as the tensor
/// says and is memory the handle's device reaches (its own, pinned or managed host memory, or
/// another device's it may access); a buffer's stream is ordered with the handle's as a kernel
/// launch orders its buffers.
///
/// ```
/// use cuda_safe_libs::dnn::{DataType, Graph, Pointwise, TensorDesc, VariantPack};
/// # fn bind(x: &cuda_safe::Buffer, y: &mut cuda_safe::Buffer) -> cuda_safe::Result<()> {
/// let mut graph = Graph::new();
/// let xt = graph.tensor(TensorDesc::packed(DataType::F32, &[1, 4, 4]))?;
/// let yt = graph.pointwise(Pointwise::Relu, xt, None)?;
/// graph.output(yt, DataType::F32)?;
/// let mut pack = VariantPack::new();
/// pack.input::<f32>(xt, x)?.output::<f32>(yt, y)?;
/// # Ok(()) }
/// ```
#[derive(Debug, Default)]
pub struct VariantPack<'a> {
    bindings: Vec<Binding<'a>>,
}

#[derive(Debug)]
struct Binding<'a> {
    tensor: Tensor,
    operand: Operand<'a>,
    data_type: DataType,
    /// Bound through [`VariantPack::output`] (borrowed exclusively), so the execution may
    /// write it.
    writable: bool,
    /// Bound through [`VariantPack::sizes`]: its caller vouched for the values.
    sizes: bool,
}

impl<'a> VariantPack<'a> {
    /// An empty pack.
    pub fn new() -> Self {
        Self::default()
    }

    /// Binds `tensor`, an input of the graph, to memory the execution reads (an operation's
    /// result is refused at execution: it takes [`output`](Self::output)).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a buffer the GPU cannot reach or that does not hold whole
    /// `T`s, or past [`MAX_BINDINGS`].
    pub fn input<T: DnnElement>(
        &mut self,
        tensor: Tensor,
        memory: &'a impl Input<T>,
    ) -> Result<&mut Self> {
        self.bind(tensor, memory.operand()?, T::DATA_TYPE, false, false)
    }

    /// Binds `tensor`, a size override of the graph's matmuls ([`MatmulOverrides`]: the
    /// sequence lengths of a padded attention, `seq_len_q` and `seq_len_kv`), to memory the
    /// execution reads. [`input`](Self::input) refuses such tensors: cuDNN's kernels take their
    /// values as loop bounds, unchecked.
    ///
    /// # Safety
    ///
    /// When the execution runs, each value in `memory` lies in `0..=` the dim it overrides
    /// (for attention: `0 <= seq_len_q <= S_q` and `0 <= seq_len_kv <= S_kv`); a value past
    /// it makes cuDNN read and write past the graph's other buffers.
    ///
    /// # Errors
    ///
    /// As [`input`](Self::input).
    ///
    /// [`MatmulOverrides`]: super::MatmulOverrides
    pub unsafe fn sizes<T: DnnElement>(
        &mut self,
        tensor: Tensor,
        memory: &'a impl Input<T>,
    ) -> Result<&mut Self> {
        self.bind(tensor, memory.operand()?, T::DATA_TYPE, false, true)
    }

    /// Binds `tensor` to memory the execution writes.
    ///
    /// # Errors
    ///
    /// As [`input`](Self::input).
    pub fn output<T: DnnElement>(
        &mut self,
        tensor: Tensor,
        memory: &'a mut impl Output<T>,
    ) -> Result<&mut Self> {
        self.bind(tensor, memory.operand_mut()?, T::DATA_TYPE, true, false)
    }

    fn bind(
        &mut self,
        tensor: Tensor,
        operand: Operand<'a>,
        data_type: DataType,
        writable: bool,
        sizes: bool,
    ) -> Result<&mut Self> {
        if self.bindings.len() == MAX_BINDINGS {
            return Err(Error::invalid_argument(format!(
                "a variant pack binds at most {MAX_BINDINGS} buffers"
            )));
        }
        self.bindings.push(Binding {
            tensor,
            operand,
            data_type,
            writable,
            sizes,
        });
        Ok(self)
    }

    /// Checks the bindings against `graph`, and their memory against the device of `on` (the
    /// handle's stream), and returns the uids and addresses in one order, and the buffers'
    /// streams.
    pub(crate) fn resolve(&self, graph: &Graph, on: &Stream) -> Result<Resolved<'a>> {
        let mut resolved = Resolved {
            uids: Vec::with_capacity(self.bindings.len()),
            pointers: Vec::with_capacity(self.bindings.len()),
            streams: [None; MAX_FOREIGN],
        };
        for binding in &self.bindings {
            let desc = graph.desc(binding.tensor)?;
            let uid = binding.tensor.uid();
            if !desc.is_bound() {
                return Err(refuse(
                    graph,
                    format!("tensor {uid} ({desc}) is not the caller's to bind"),
                ));
            }
            if resolved.uids.contains(&uid) {
                return Err(refuse(graph, format!("tensor {uid} is bound twice")));
            }
            // The execution writes an operation's result: only memory lent exclusively
            // (`output`) may hold it, never memory lent for reading.
            if graph.writes(binding.tensor) && !binding.writable {
                return Err(refuse(
                    graph,
                    format!(
                        "tensor {uid} is written by the graph: bind it with `output`, not `input`"
                    ),
                ));
            }
            if graph.is_size_override(binding.tensor) && !binding.sizes {
                return Err(refuse(
                    graph,
                    format!(
                        "tensor {uid} holds sizes cuDNN takes as loop bounds, unchecked: bind \
                         it with the unsafe `VariantPack::sizes`, not `input`"
                    ),
                ));
            }
            if binding.data_type != desc.data_type() {
                return Err(refuse(
                    graph,
                    format!(
                        "tensor {uid} is {}; the buffer bound to it holds {}",
                        desc.data_type(),
                        binding.data_type
                    ),
                ));
            }
            let span = desc.span()?;
            if binding.operand.len() < span {
                return Err(refuse(
                    graph,
                    format!(
                        "tensor {uid} ({desc}) spans {span} elements; its buffer holds {}",
                        binding.operand.len()
                    ),
                ));
            }
            let alignment = u64::from(desc.byte_alignment());
            if !binding.operand.as_raw().is_multiple_of(alignment) {
                return Err(refuse(
                    graph,
                    format!(
                        "tensor {uid} needs memory aligned to {alignment} bytes; its buffer is \
                         at {:#x}",
                        binding.operand.as_raw()
                    ),
                ));
            }
            let stream = binding.operand.on(on).map_err(|error| match error {
                Error::InvalidArgument(why) => refuse(graph, format!("tensor {uid}: {why}")),
                other => other,
            })?;
            resolved.uids.push(uid);
            resolved.pointers.push(binding.operand.ptr_mut());
            if !resolved
                .streams
                .iter()
                .flatten()
                .any(|s| s.as_raw() == stream.as_raw())
            {
                let slot = resolved.streams.iter_mut().find(|slot| slot.is_none());
                *slot.ok_or_else(|| {
                    refuse(
                        graph,
                        format!("its buffers are on more than {MAX_FOREIGN} streams"),
                    )
                })? = Some(stream);
            }
        }
        self.sizes_bound(graph)?;
        for (tensor, desc) in graph.tensors() {
            if desc.is_bound() && !resolved.uids.contains(&tensor.uid()) {
                return Err(refuse(
                    graph,
                    format!("tensor {} ({desc}) is bound to no buffer", tensor.uid()),
                ));
            }
        }
        Ok(resolved)
    }
}

impl VariantPack<'_> {
    /// Refuses the pack unless every size override of `graph`'s matmuls is bound through
    /// [`sizes`](Self::sizes): whatever made the graph, no override reaches cuDNN but from
    /// memory whose caller vouched for it (a constant or a result in its place would not be).
    fn sizes_bound(&self, graph: &Graph) -> Result<()> {
        for tensor in graph.size_overrides() {
            if !self.bindings.iter().any(|b| b.tensor == tensor && b.sizes) {
                return Err(refuse(
                    graph,
                    format!(
                        "tensor {} is a matmul's size override bound to no memory through the \
                         unsafe `VariantPack::sizes`",
                        tensor.uid()
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// A pack checked against its graph.
pub(crate) struct Resolved<'a> {
    pub(crate) uids: Vec<i64>,
    pub(crate) pointers: Vec<*mut c_void>,
    pub(crate) streams: [Option<&'a Stream>; MAX_FOREIGN],
}

impl Resolved<'_> {
    /// Adds what the handle binds: each constant of `graph` passed by value (a host pointer
    /// into the graph, which outlives the call) and each workspace tensor at its offset from
    /// `workspace` (the plan's `scratch`).
    pub(crate) fn bind_internal(
        &mut self,
        graph: &Graph,
        workspace: *mut c_void,
        scratch: &[(i64, usize)],
    ) {
        for (tensor, desc) in graph.tensors() {
            if let Some(value) = desc.by_value() {
                self.uids.push(tensor.uid());
                self.pointers.push(value.as_ptr());
            }
        }
        for &(uid, offset) in scratch {
            self.uids.push(uid);
            self.pointers.push(workspace.wrapping_byte_add(offset));
        }
    }
}

#[cold]
fn refuse(graph: &Graph, why: String) -> Error {
    Error::invalid_argument(format!("{graph}: {why}"))
}

#[cfg(test)]
mod tests {
    use super::VariantPack;
    use crate::dnn::{DataType, Graph, MatmulOverrides, Op, Scalar, TensorDesc};

    /// A graph whose matmul takes a constant as its M override, pushed past `matmul_with`'s
    /// check: planning and binding refuse it all the same.
    #[test]
    fn an_override_no_caller_binds_is_refused_however_the_graph_was_made() {
        let mut graph = Graph::new();
        let f16 = TensorDesc::packed(DataType::F16, &[1, 64, 64]);
        let a = graph.tensor(f16.clone()).unwrap();
        let b = graph.tensor(f16).unwrap();
        let m = graph.scalar(Scalar::i32(1 << 24), 3).unwrap();
        let c = graph
            .tensor(TensorDesc::packed(DataType::F32, &[1, 64, 64]).set_virtual(true))
            .unwrap();
        let overrides = MatmulOverrides {
            m: Some(m),
            ..MatmulOverrides::default()
        };
        graph.push(Op::Matmul {
            a,
            b,
            c,
            compute: DataType::F32,
            overrides,
        });
        graph.output(c, DataType::F32).unwrap();
        let planned = graph.check().unwrap_err().to_string();
        assert!(planned.contains("VariantPack::sizes"), "{planned}");
        let bound = VariantPack::new()
            .sizes_bound(&graph)
            .unwrap_err()
            .to_string();
        assert!(bound.contains("size override"), "{bound}");
    }
}
