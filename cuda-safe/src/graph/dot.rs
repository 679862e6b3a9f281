//! A graph written as Graphviz DOT for debugging (`cuGraphDebugDotPrint`), with the details
//! [`DotFlags`] ask for.
//!
//! ```no_run
//! use cuda_safe::{Device, DotFlags, Graph};
//!
//! let device = Device::new(0)?;
//! let mut graph = Graph::new(&device.context()?)?;
//! let first = graph.add_empty(&[])?;
//! graph.add_empty(&[first])?;
//! graph.write_dot("graph.dot", DotFlags::VERBOSE)?; // then: dot -Tsvg graph.dot > graph.svg
//! # Ok::<(), cuda_safe::Error>(())
//! ```

use std::ffi::CString;
use std::path::Path;

use super::Graph;
use crate::error::{Error, Result, cu};
use crate::ffi::to_c_string;
use cuda_sys::CUgraphDebugDot_flags as Raw;

bitflags::bitflags! {
    /// What a DOT dump shows beyond the nodes and edges (`CU_GRAPH_DEBUG_DOT_FLAGS_*`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct DotFlags: u32 {
        /// Everything below.
        const VERBOSE = Raw::CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE.0;
        /// The runtime API's type names instead of the driver's.
        const RUNTIME_TYPES = Raw::CU_GRAPH_DEBUG_DOT_FLAGS_RUNTIME_TYPES.0;
        /// Kernel nodes' launch shapes and arguments.
        const KERNEL_NODE_PARAMS = Raw::CU_GRAPH_DEBUG_DOT_FLAGS_KERNEL_NODE_PARAMS.0;
        /// Copy nodes' parameters.
        const MEMCPY_NODE_PARAMS = Raw::CU_GRAPH_DEBUG_DOT_FLAGS_MEMCPY_NODE_PARAMS.0;
        /// Memset nodes' parameters.
        const MEMSET_NODE_PARAMS = Raw::CU_GRAPH_DEBUG_DOT_FLAGS_MEMSET_NODE_PARAMS.0;
        /// Host nodes' parameters.
        const HOST_NODE_PARAMS = Raw::CU_GRAPH_DEBUG_DOT_FLAGS_HOST_NODE_PARAMS.0;
        /// Event nodes' events.
        const EVENT_NODE_PARAMS = Raw::CU_GRAPH_DEBUG_DOT_FLAGS_EVENT_NODE_PARAMS.0;
        /// Kernel nodes' attributes.
        const KERNEL_NODE_ATTRIBUTES = Raw::CU_GRAPH_DEBUG_DOT_FLAGS_KERNEL_NODE_ATTRIBUTES.0;
        /// Node and kernel handles.
        const HANDLES = Raw::CU_GRAPH_DEBUG_DOT_FLAGS_HANDLES.0;
        /// Allocation nodes' parameters.
        const MEM_ALLOC_NODE_PARAMS = Raw::CU_GRAPH_DEBUG_DOT_FLAGS_MEM_ALLOC_NODE_PARAMS.0;
        /// Free nodes' parameters.
        const MEM_FREE_NODE_PARAMS = Raw::CU_GRAPH_DEBUG_DOT_FLAGS_MEM_FREE_NODE_PARAMS.0;
        /// Conditional nodes' parameters.
        const CONDITIONAL_NODE_PARAMS =
            Raw::CU_GRAPH_DEBUG_DOT_FLAGS_CONDITIONAL_NODE_PARAMS.0;
    }
}

/// `path` as the C string the driver takes: UTF-8 and without NUL, refused otherwise.
fn dot_path(path: &Path) -> Result<CString> {
    let text = path.to_str().ok_or_else(|| {
        Error::invalid_argument(format!("the DOT path {} is not UTF-8", path.display()))
    })?;
    to_c_string("the DOT path", text)
}

impl Graph {
    /// Writes the graph as Graphviz DOT to `path`, with the details `flags` ask for
    /// (`cuGraphDebugDotPrint`).
    ///
    #[doc = cuda_sys::api_doc!(cuGraphDebugDotPrint)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a path that is not UTF-8 or holds a NUL; the driver's
    /// error (the file cannot be written).
    #[doc(alias = "cuGraphDebugDotPrint")]
    pub fn write_dot(&self, path: impl AsRef<Path>, flags: DotFlags) -> Result<()> {
        let path = dot_path(path.as_ref())?;
        // SAFETY: a valid graph and NUL-terminated path.
        unsafe {
            cu!(
                self.driver(),
                cuGraphDebugDotPrint(self.as_raw(), path.as_ptr(), flags.bits())
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_the_drivers_bits() {
        assert_eq!(DotFlags::default().bits(), 0);
        assert_eq!(DotFlags::VERBOSE.bits(), 1);
        assert_eq!(DotFlags::KERNEL_NODE_PARAMS.bits(), 4);
        assert_eq!(DotFlags::HANDLES.bits(), 1024);
        assert_eq!(DotFlags::CONDITIONAL_NODE_PARAMS.bits(), 32768);
        let both = DotFlags::KERNEL_NODE_PARAMS | DotFlags::CONDITIONAL_NODE_PARAMS;
        assert_eq!(both.bits(), 4 | 32768);
        assert_eq!(DotFlags::all().iter().count(), 12);
    }

    #[test]
    fn paths_are_refused_before_the_driver() {
        assert_eq!(
            dot_path(Path::new("/tmp/graph.dot")).unwrap().as_bytes(),
            b"/tmp/graph.dot"
        );
        let error = dot_path(Path::new("bad\0name.dot")).unwrap_err();
        assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let path = Path::new(std::ffi::OsStr::from_bytes(b"\xffgraph.dot"));
            assert!(
                dot_path(path)
                    .unwrap_err()
                    .to_string()
                    .contains("not UTF-8")
            );
        }
    }
}
