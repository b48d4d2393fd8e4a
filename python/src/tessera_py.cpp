// tessera._tessera: the nanobind layer under the Python package `tessera`.
//
// Values cross the boundary in a small tagged form that python/tessera/
// _session.py builds and reads, so that all numpy dtype handling (including
// the ml_dtypes types numpy itself does not know) lives in Python:
//   ("t", dtype_name, shape, uint8 buffer)   numeric tensor, raw C-order bytes
//   ("s", shape, [str | bytes, ...])         string tensor
//   ("q", elem_dtype_name, [value, ...])     sequence of tensors
//   ("n", elem_dtype_name)                   empty optional
// Inputs are borrowed from their arrays (copied where they must be normalized);
// outputs are handed to numpy without a copy when Tessera holds no other
// reference to their storage. The common call — plain numpy arrays of the
// element types numpy and Tessera share — skips the tagged form (run_arrays).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <memory>

#include "tessera/tessera.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using tessera::DataValue;
using tessera::DType;
using tessera::Error;
using tessera::ErrorCode;
using tessera::Tensor;

struct ExceptionClasses {
  PyObject* error = nullptr;
  PyObject* invalid_model = nullptr;
  PyObject* invalid_argument = nullptr;
  PyObject* unsupported = nullptr;
  PyObject* execution = nullptr;
  PyObject* file = nullptr;
  PyObject* internal = nullptr;

  PyObject* for_code(ErrorCode c) const {
    switch (c) {
      case ErrorCode::invalid_model:
        return invalid_model;
      case ErrorCode::invalid_argument:
        return invalid_argument;
      case ErrorCode::unsupported:
        return unsupported;
      case ErrorCode::runtime:
        return execution;
      case ErrorCode::io:
        return file;
      case ErrorCode::internal:
        return internal;
    }
    return error;
  }
};
ExceptionClasses g_exc;

// A Python str from bytes that may not be valid UTF-8 (names in a corrupt
// model): undecodable bytes become surrogate escapes instead of an error.
nb::str py_str(const std::string& s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), Py_ssize_t(s.size()), "surrogateescape");
  if (!o) throw nb::python_error();
  return nb::steal<nb::str>(o);
}

[[noreturn]] void raise_arg(const std::string& msg) {
  throw Error(ErrorCode::invalid_argument, msg);
}

DType dtype_from(const std::string& name) {
  DType t = tessera::dtype_from_name(name);
  if (t == DType::undefined && name != "undefined") raise_arg("unknown element type '" + name + "'");
  return t;
}

tessera::Shape shape_from(nb::handle h) {
  tessera::Shape s;
  for (nb::handle d : h) {
    const int64_t v = nb::cast<int64_t>(d);
    if (v < 0) raise_arg("negative dimension in shape");
    s.push_back(v);
  }
  return s;
}

using ByteArray = nb::ndarray<const uint8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

DataValue decode_value(nb::handle v, const std::string& where);

Tensor decode_tensor(nb::handle v, const std::string& where) {
  nb::tuple t = nb::cast<nb::tuple>(v);
  const std::string tag = nb::cast<std::string>(t[0]);
  if (tag == "t") {
    const DType dt = dtype_from(nb::cast<std::string>(t[1]));
    if (dt == DType::undefined || dt == DType::string) raise_arg(where + ": bad tensor element type");
    tessera::Shape shape = shape_from(t[2]);
    ByteArray buf = nb::cast<ByteArray>(t[3]);
    const size_t want = size_t(tessera::shape_numel(shape)) * tessera::dtype_size(dt);
    if (buf.nbytes() != want)
      raise_arg(tessera::cat(where, ": ", buf.nbytes(), " bytes of data for ", tessera::dtype_name(dt),
                             tessera::shape_str(shape)));
    // The array's own memory, not a copy (as onnxruntime feeds a numpy array): the caller's feeds dict
    // keeps it alive through the run, which only reads its inputs; PySession::run copies any output that
    // still shares it. The copy (a 600 KB image) cost MobileNetV2 ~1% of a run. Booleans are
    // normalized to 0/1, so copied; so is memory not aligned for the element type.
    const auto addr = reinterpret_cast<uintptr_t>(buf.data());
    if (want && dt != DType::boolean && addr % tessera::dtype_size(dt) == 0)
      return Tensor::borrow(dt, std::move(shape), const_cast<uint8_t*>(buf.data()));
    Tensor out = Tensor::uninitialized(dt, shape);  // every byte is copied in below
    if (out.nbytes()) std::memcpy(out.raw_data(), buf.data(), out.nbytes());
    if (dt == DType::boolean) {
      auto* p = static_cast<uint8_t*>(out.raw_data());
      for (int64_t i = 0; i < out.numel(); ++i) p[i] = p[i] != 0;
    }
    return out;
  }
  if (tag == "s") {
    tessera::Shape shape = shape_from(t[1]);
    nb::list items = nb::cast<nb::list>(t[2]);
    Tensor out(DType::string, shape);
    if (int64_t(items.size()) != out.numel())
      raise_arg(tessera::cat(where, ": ", items.size(), " strings for shape ", tessera::shape_str(shape)));
    std::string* p = out.data<std::string>();
    for (size_t i = 0; i < items.size(); ++i) {
      nb::handle s = items[i];
      if (nb::isinstance<nb::bytes>(s)) {
        nb::bytes b = nb::borrow<nb::bytes>(s);
        p[i].assign(b.c_str(), b.size());
      } else if (nb::isinstance<nb::str>(s)) {
        p[i] = nb::cast<std::string>(s);
      } else {
        raise_arg(where + ": string tensors hold str or bytes elements");
      }
    }
    return out;
  }
  raise_arg(where + ": expected a tensor");
}

DataValue decode_value(nb::handle v, const std::string& where) {
  nb::tuple t = nb::cast<nb::tuple>(v);
  const std::string tag = nb::cast<std::string>(t[0]);
  if (tag == "q") {
    const DType elem = dtype_from(nb::cast<std::string>(t[1]));
    tessera::TensorSequence seq;
    size_t i = 0;
    for (nb::handle item : nb::cast<nb::list>(t[2]))
      seq.push_back(decode_tensor(item, tessera::cat(where, "[", i++, "]")));
    return DataValue::make_sequence(std::move(seq), elem);
  }
  if (tag == "n") return DataValue::make_optional_none(dtype_from(nb::cast<std::string>(t[1])));
  return DataValue(decode_tensor(v, where));
}

nb::tuple shape_tuple(const tessera::Shape& s) {
  nb::list l;
  for (int64_t d : s) l.append(d);
  return nb::tuple(l);
}

// A numpy array over t's storage (d: its element type as numpy sees it, shape: its dims), without a copy
// when nobody else holds the storage; otherwise over a copy (the storage may be a session constant, an
// input or a buffer the runtime reuses).
nb::object numpy_over(Tensor t, nb::dlpack::dtype d, const std::vector<size_t>& shape) {
  if (!t.is_contiguous()) t = t.contiguous();
  if (t.storage().use_count() != 1) t = t.clone();
  auto* keep = new std::shared_ptr<void>(t.storage());
  nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<std::shared_ptr<void>*>(p); });
  static uint8_t empty_byte = 0;
  void* data = t.nbytes() ? t.raw_data() : &empty_byte;
  return nb::cast(nb::ndarray<nb::numpy>(data, shape.size(), shape.data(), owner, nullptr, d));
}

nb::object encode_tensor(Tensor t) {
  if (t.dtype() == DType::string) {
    Tensor c = t.contiguous();
    nb::list items;
    const std::string* p = c.data<std::string>();
    for (int64_t i = 0; i < c.numel(); ++i) {
      items.append(py_str(p[i]));
    }
    return nb::make_tuple("s", shape_tuple(c.shape()), items);
  }
  const DType dt = t.dtype();
  nb::tuple shape = shape_tuple(t.shape());
  const size_t nbytes = t.nbytes();
  return nb::make_tuple("t", std::string(tessera::dtype_name(dt)), shape,
                        numpy_over(std::move(t), nb::dtype<uint8_t>(), {nbytes}));
}

nb::object encode_value(DataValue v) {
  switch (v.kind) {
    case DataValue::Kind::tensor:
      return encode_tensor(std::move(v.tensor));
    case DataValue::Kind::sequence: {
      nb::list items;
      for (Tensor& t : v.sequence) items.append(encode_tensor(std::move(t)));
      DType elem = v.elem_type;
      if (elem == DType::undefined && !v.sequence.empty()) elem = v.sequence.front().dtype();
      return nb::make_tuple("q", std::string(tessera::dtype_name(elem)), items);
    }
    default:
      return nb::make_tuple("n", std::string(tessera::dtype_name(v.elem_type)));
  }
}

nb::list describe(const std::vector<tessera::ValueInfo>& infos) {
  nb::list out;
  for (const auto& vi : infos) {
    nb::object shape = nb::none();
    if (vi.has_shape) {
      nb::list dims;
      for (size_t i = 0; i < vi.shape.size(); ++i) {
        const std::string sym = i < vi.dim_names.size() ? vi.dim_names[i] : std::string();
        if (vi.shape[i] >= 0)
          dims.append(vi.shape[i]);
        else if (!sym.empty())
          dims.append(py_str(sym));
        else
          dims.append(nb::none());
      }
      shape = dims;
    }
    out.append(
        nb::make_tuple(py_str(vi.name), py_str(vi.type), std::string(tessera::dtype_name(vi.dtype)), shape));
  }
  return out;
}

// The element types numpy and DLPack share with Tessera: the ones the fast path below takes and returns as
// numpy arrays directly (bool, complex and the narrow floats go the tagged way, whose Python side knows
// them).
struct NativeType {
  DType type;
  nb::dlpack::dtype_code code;
  uint8_t bits;
};
constexpr NativeType kNativeTypes[] = {
    {DType::f32, nb::dlpack::dtype_code::Float, 32}, {DType::f64, nb::dlpack::dtype_code::Float, 64},
    {DType::f16, nb::dlpack::dtype_code::Float, 16}, {DType::i8, nb::dlpack::dtype_code::Int, 8},
    {DType::i16, nb::dlpack::dtype_code::Int, 16},   {DType::i32, nb::dlpack::dtype_code::Int, 32},
    {DType::i64, nb::dlpack::dtype_code::Int, 64},   {DType::u8, nb::dlpack::dtype_code::UInt, 8},
    {DType::u16, nb::dlpack::dtype_code::UInt, 16},  {DType::u32, nb::dlpack::dtype_code::UInt, 32},
    {DType::u64, nb::dlpack::dtype_code::UInt, 64}};

DType native_dtype(const nb::dlpack::dtype& d) {
  for (const NativeType& n : kNativeTypes)
    if (d.lanes == 1 && d.code == uint8_t(n.code) && d.bits == n.bits) return n.type;
  return DType::undefined;
}

bool dlpack_of(DType t, nb::dlpack::dtype* d) {
  for (const NativeType& n : kNativeTypes)
    if (n.type == t) {
      *d = nb::dlpack::dtype{uint8_t(n.code), n.bits, 1};
      return true;
    }
  return false;
}

using AnyArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

class PySession {
 public:
  explicit PySession(std::unique_ptr<tessera::Session> s) : s_(std::move(s)), inputs_(s_->inputs()) {}

  static PySession from_path(const std::string& path, const tessera::SessionOptions& o) {
    std::unique_ptr<tessera::Session> s;
    {
      nb::gil_scoped_release release;
      s = std::make_unique<tessera::Session>(path, o);
    }
    return PySession(std::move(s));
  }
  static PySession from_bytes(nb::bytes data, const tessera::SessionOptions& o) {
    std::unique_ptr<tessera::Session> s;
    std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(data.c_str()), data.size());
    {
      nb::gil_scoped_release release;  // `data` stays alive (and immutable) for the call
      s = std::make_unique<tessera::Session>(bytes, o);
    }
    return PySession(std::move(s));
  }

  nb::list inputs() const { return describe(s_->inputs()); }
  nb::list outputs() const { return describe(s_->outputs()); }
  nb::str graph_text() const { return py_str(s_->graph_text()); }
  size_t peak_memory_bytes() const { return s_->peak_memory_bytes(); }
  std::string end_profiling() { return s_->end_profiling(); }

  nb::list run(nb::dict feeds, const std::vector<std::string>& output_names) const {
    std::map<std::string, DataValue> values;
    for (auto [k, v] : feeds) {
      const std::string name = nb::cast<std::string>(k);
      values[name] = decode_value(v, "input '" + name + "'");
    }
    std::vector<DataValue> outs;
    {
      nb::gil_scoped_release release;
      outs = s_->run(values, output_names);
    }
    // `values` still holds the inputs, so an output sharing an input's memory (borrowed from the caller's
    // array, see decode_tensor) has other owners and is copied, not handed to numpy
    nb::list result;
    for (DataValue& v : outs) result.append(encode_value(std::move(v)));
    return result;
  }

  // The common call, without the tagged form: every model input given once as a C-contiguous numpy array of
  // a native element type, the model's own, with its static dims. The arrays are borrowed for the run and
  // tensor outputs of native types come back as numpy arrays (others in the tagged form). None — before
  // anything runs — when the feeds are anything else: the caller then takes the general path, which also
  // words the errors. A run after a cold cache pays for every Python-level step (MobileNetV2: the tagged
  // round trip cost ~1.5% of a run, see bench/RESULTS.md), hence this path in C++.
  nb::object run_arrays(nb::dict feeds, nb::handle names) const {
    if (feeds.size() != inputs_.size()) return nb::none();
    std::vector<std::string> output_names;
    if (!names.is_none()) {
      if (!nb::isinstance<nb::list>(names)) return nb::none();
      for (nb::handle n : names) {
        if (!nb::isinstance<nb::str>(n)) return nb::none();
        output_names.push_back(nb::cast<std::string>(n));
      }
    }
    std::map<std::string, DataValue> values;
    // the arrays stay referenced through the run, whatever the caller's dict does
    std::vector<AnyArray> held;
    held.reserve(inputs_.size());
    for (const tessera::ValueInfo& vi : inputs_) {
      PyObject* v = PyDict_GetItemString(feeds.ptr(), vi.name.c_str());
      AnyArray a;
      if (!v || vi.type.rfind("tensor(", 0) != 0 || !nb::try_cast(nb::handle(v), a, /*convert=*/false))
        return nb::none();
      const DType dt = native_dtype(a.dtype());
      if (dt == DType::undefined || dt != vi.dtype) return nb::none();
      tessera::Shape shape(a.ndim());
      for (size_t i = 0; i < a.ndim(); ++i) shape[i] = int64_t(a.shape(i));
      if (vi.has_shape) {
        if (shape.size() != vi.shape.size()) return nb::none();
        for (size_t i = 0; i < shape.size(); ++i)
          if (vi.shape[i] >= 0 && vi.shape[i] != shape[i]) return nb::none();
      }
      const auto addr = reinterpret_cast<uintptr_t>(a.data());
      if (a.size() && addr % tessera::dtype_size(dt) != 0) return nb::none();
      void* data = const_cast<void*>(a.data());
      values[vi.name] = DataValue(a.size() ? Tensor::borrow(dt, std::move(shape), data) : Tensor(dt, shape));
      held.push_back(std::move(a));
    }
    std::vector<DataValue> outs;
    {
      nb::gil_scoped_release release;
      outs = s_->run(values, output_names);
    }
    nb::list result;
    for (DataValue& v : outs) {
      nb::dlpack::dtype d;
      if (v.kind != DataValue::Kind::tensor || !dlpack_of(v.tensor.dtype(), &d)) {
        result.append(encode_value(std::move(v)));
        continue;
      }
      const std::vector<size_t> shape(v.tensor.shape().begin(), v.tensor.shape().end());
      result.append(numpy_over(std::move(v.tensor), d, shape));
    }
    return result;
  }

 private:
  std::unique_ptr<tessera::Session> s_;
  std::vector<tessera::ValueInfo> inputs_;
};

PyObject* new_exception(nb::module_& m, const char* name, PyObject* bases, const char* doc) {
  PyObject* cls = PyErr_NewExceptionWithDoc((std::string("tessera.") + name).c_str(), doc, bases, nullptr);
  if (!cls) throw nb::python_error();
  m.attr(name) = nb::handle(cls);
  return cls;
}

}  // namespace

NB_MODULE(_tessera, m) {
  m.doc() = "Tessera's C++ runtime (use the `tessera` package, not this module)";

  g_exc.error = new_exception(m, "Error", PyExc_RuntimeError, "A Tessera failure (base class).");
  auto both = [](PyObject* a, PyObject* b) {
    return nb::make_tuple(nb::handle(a), nb::handle(b)).release().ptr();
  };
  g_exc.invalid_model =
      new_exception(m, "InvalidModel", g_exc.error, "The model file or graph is malformed.");
  g_exc.invalid_argument = new_exception(m, "InvalidArgument", both(g_exc.error, PyExc_ValueError),
                                         "Wrong inputs: names, shapes, element types.");
  g_exc.unsupported = new_exception(m, "Unsupported", both(g_exc.error, PyExc_NotImplementedError),
                                    "A valid construct Tessera does not implement.");
  g_exc.execution = new_exception(m, "ExecutionError", g_exc.error, "A failure while running the model.");
  g_exc.file = new_exception(m, "FileError", g_exc.error, "A file could not be read or written.");
  g_exc.internal = new_exception(m, "InternalError", g_exc.error, "A bug in Tessera.");

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Error& e) {
      PyObject* cls = g_exc.for_code(e.code());
      // Nothing here may throw: names from a corrupt model need not be UTF-8.
      auto text = [](const std::string& s) {
        return PyUnicode_DecodeUTF8(s.data(), Py_ssize_t(s.size()), "replace");
      };
      PyObject* msg = text(e.what());
      if (!msg) return;  // a Python error is set already
      PyObject* inst = PyObject_CallOneArg(cls, msg);
      Py_DECREF(msg);
      if (!inst) return;
      const std::pair<const char*, std::string> attrs[] = {{"node_name", e.node_name()},
                                                           {"op_type", e.op_type()},
                                                           {"code", tessera::error_code_name(e.code())}};
      for (const auto& [k, v] : attrs) {
        PyObject* val = text(v);
        if (!val || PyObject_SetAttrString(inst, k, val) != 0) PyErr_Clear();
        Py_XDECREF(val);
      }
      PyErr_SetObject(cls, inst);
      Py_DECREF(inst);
    }
  });

  nb::class_<tessera::SessionOptions>(m, "_SessionOptions")
      .def(nb::init<>())
      .def_rw("threads", &tessera::SessionOptions::threads)
      .def_rw("flush_denormals", &tessera::SessionOptions::flush_denormals)
      .def_rw("optimization_level", &tessera::SessionOptions::optimization_level)
      .def_rw("enable_profiling", &tessera::SessionOptions::enable_profiling)
      .def_rw("profile_path", &tessera::SessionOptions::profile_path)
      .def_rw("backend", &tessera::SessionOptions::backend);

  nb::class_<PySession>(m, "_Session")
      .def_static("from_path", &PySession::from_path, "path"_a, "options"_a)
      .def_static("from_bytes", &PySession::from_bytes, "data"_a, "options"_a)
      .def("inputs", &PySession::inputs)
      .def("outputs", &PySession::outputs)
      .def("graph_text", &PySession::graph_text)
      .def("peak_memory_bytes", &PySession::peak_memory_bytes)
      .def("end_profiling", &PySession::end_profiling)
      .def("run", &PySession::run, "feeds"_a, "output_names"_a)
      .def("run_arrays", &PySession::run_arrays, "feeds"_a, "output_names"_a.none());

  m.def("version", &tessera::version);
  m.def("kernel_isa", &tessera::kernel_isa);
  m.def("dtype_size", [](const std::string& name) { return tessera::dtype_size(dtype_from(name)); });
}
