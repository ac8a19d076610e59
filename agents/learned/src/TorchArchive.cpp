// The pickle LibTorch writes for a module (protocol 2): objects of classes __torch__.*, built
// from dicts of their attributes; tensors as torch._utils._rebuild_tensor_v2 over a storage
// named by a persistent id, whose bytes are the zip entry data/<key>.
#include "TorchArchive.h"

#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>

#include "StoredZip.h"
#include "mirage/core/Error.h"

namespace mirage::learned {
namespace {

struct Value;
using Ref = std::shared_ptr<Value>;

struct Value {
  enum class Kind {
    kNone,
    kMark,
    kBool,
    kInt,
    kFloat,
    kString,
    kTuple,
    kList,
    kDict,
    kGlobal,
    kObject,
    kStorage,
    kTensor
  };
  Kind kind = Kind::kNone;
  std::int64_t i = 0;
  double f = 0;
  std::string s;                             // a string; a global's "module.name"; a storage's key
  std::vector<Ref> items;                    // a tuple or list
  std::vector<std::pair<Ref, Ref>> entries;  // a dict, or an object's attributes
  std::string dtype;                         // a storage's class (torch.FloatStorage)
  Ref storage;                               // a tensor's
  std::int64_t offset = 0;
  std::vector<std::int64_t> sizes, strides;
};

Ref make(Value::Kind k) {
  auto v = std::make_shared<Value>();
  v->kind = k;
  return v;
}

std::int64_t as_int(const Ref& v) {
  if (v->kind != Value::Kind::kInt) throw std::runtime_error("expected an integer in the pickle");
  return v->i;
}

std::vector<std::int64_t> as_ints(const Ref& v) {
  if (v->kind != Value::Kind::kTuple) throw std::runtime_error("expected a tuple in the pickle");
  std::vector<std::int64_t> out;
  for (const Ref& x : v->items) out.push_back(as_int(x));
  return out;
}

class Unpickler {
 public:
  explicit Unpickler(const std::string& bytes) : b_(bytes) {}

  Ref run() {
    for (;;) {
      const auto op = static_cast<unsigned char>(byte());
      switch (op) {
        case 0x80: byte(); break;  // PROTO
        case '.': return pop();    // STOP
        case 'c': {                // GLOBAL
          auto g = make(Value::Kind::kGlobal);
          const std::string module = line();  // then the name: two statements fix the order
          g->s = module + "." + line();
          push(g);
          break;
        }
        case 'q': memo_[fixed(1)] = top(); break;  // BINPUT
        case 'r': memo_[fixed(4)] = top(); break;  // LONG_BINPUT
        case 'h': push(memo(fixed(1))); break;     // BINGET
        case 'j': push(memo(fixed(4))); break;     // LONG_BINGET
        case '(': push(make(Value::Kind::kMark)); break;
        case ')': push(make(Value::Kind::kTuple)); break;
        case ']': push(make(Value::Kind::kList)); break;
        case '}': push(make(Value::Kind::kDict)); break;
        case 't': {  // TUPLE
          auto t = make(Value::Kind::kTuple);
          t->items = pop_to_mark();
          push(t);
          break;
        }
        case 0x85:
        case 0x86:
        case 0x87: {  // TUPLE1, TUPLE2, TUPLE3
          auto t = make(Value::Kind::kTuple);
          t->items.resize(op - 0x84u);
          for (auto it = t->items.rbegin(); it != t->items.rend(); ++it) *it = pop();
          push(t);
          break;
        }
        case 'X': {  // BINUNICODE
          auto s = make(Value::Kind::kString);
          s->s = take(fixed(4));
          push(s);
          break;
        }
        case 'K': push_int(static_cast<std::int64_t>(fixed(1))); break;
        case 'M': push_int(static_cast<std::int64_t>(fixed(2))); break;
        case 'J': push_int(static_cast<std::int32_t>(fixed(4))); break;
        case 0x8a: {  // LONG1: little-endian two's complement of n bytes
          const std::size_t n = fixed(1);
          const std::string raw = take(n);
          std::int64_t v = 0;
          for (std::size_t k = n; k-- > 0;) v = (v << 8) | static_cast<unsigned char>(raw[k]);
          if (n > 0 && n < 8 && (static_cast<unsigned char>(raw[n - 1]) & 0x80))
            v -= std::int64_t{1} << (8 * n);
          push_int(v);
          break;
        }
        case 'G': {  // BINFLOAT, big-endian
          std::uint64_t bits = 0;
          for (char c : take(8)) bits = (bits << 8) | static_cast<unsigned char>(c);
          auto f = make(Value::Kind::kFloat);
          std::memcpy(&f->f, &bits, sizeof bits);
          push(f);
          break;
        }
        case 'N': push(make(Value::Kind::kNone)); break;
        case 0x88:
        case 0x89: {  // NEWTRUE, NEWFALSE
          auto v = make(Value::Kind::kBool);
          v->i = op == 0x88;
          push(v);
          break;
        }
        case 'Q': persistent_id(); break;  // BINPERSID
        case 'R': reduce(); break;
        case 0x81: {  // NEWOBJ
          pop();      // the arguments: () for LibTorch's modules
          auto cls = pop();
          auto obj = make(Value::Kind::kObject);
          obj->s = cls->s;
          push(obj);
          break;
        }
        case 's': {  // SETITEM
          auto v = pop();
          auto k = pop();
          top()->entries.emplace_back(k, v);
          break;
        }
        case 'u': {  // SETITEMS
          auto kv = pop_to_mark();
          if (kv.size() % 2) throw std::runtime_error("an odd SETITEMS in the pickle");
          for (std::size_t k = 0; k < kv.size(); k += 2)
            top()->entries.emplace_back(kv[k], kv[k + 1]);
          break;
        }
        case 'a': {  // APPEND
          auto v = pop();
          top()->items.push_back(v);
          break;
        }
        case 'e': {  // APPENDS
          auto vs = pop_to_mark();
          top()->items.insert(top()->items.end(), vs.begin(), vs.end());
          break;
        }
        case 'b': {  // BUILD: an object's attributes from a dict
          auto state = pop();
          if (state->kind != Value::Kind::kDict)
            throw std::runtime_error("an object built from no dict");
          top()->entries = state->entries;
          break;
        }
        default:
          throw std::runtime_error("pickle opcode 0x" + hex(op) +
                                   " is not one LibTorch writes for a module");
      }
    }
  }

 private:
  const std::string& b_;
  std::size_t at_ = 0;
  std::vector<Ref> stack_;
  std::map<std::uint32_t, Ref> memo_;

  static std::string hex(unsigned v) {
    const char* digits = "0123456789abcdef";
    return {digits[v >> 4], digits[v & 15]};
  }
  char byte() {
    if (at_ >= b_.size()) throw std::runtime_error("the pickle ends early");
    return b_[at_++];
  }
  std::string take(std::size_t n) {
    if (at_ + n > b_.size()) throw std::runtime_error("the pickle ends early");
    at_ += n;
    return b_.substr(at_ - n, n);
  }
  std::uint32_t fixed(int bytes) {
    std::uint32_t v = 0;
    const std::string raw = take(static_cast<std::size_t>(bytes));
    for (int k = bytes - 1; k >= 0; --k)
      v = (v << 8) | static_cast<unsigned char>(raw[static_cast<std::size_t>(k)]);
    return v;
  }
  std::string line() {
    const std::size_t nl = b_.find('\n', at_);
    if (nl == std::string::npos) throw std::runtime_error("the pickle ends early");
    std::string s = b_.substr(at_, nl - at_);
    at_ = nl + 1;
    return s;
  }
  void push(Ref v) { stack_.push_back(std::move(v)); }
  void push_int(std::int64_t i) {
    auto v = make(Value::Kind::kInt);
    v->i = i;
    push(v);
  }
  Ref pop() {
    if (stack_.empty()) throw std::runtime_error("the pickle pops an empty stack");
    Ref v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  const Ref& top() const {
    if (stack_.empty()) throw std::runtime_error("the pickle reads an empty stack");
    return stack_.back();
  }
  Ref memo(std::uint32_t k) const {
    const auto it = memo_.find(k);
    if (it == memo_.end()) throw std::runtime_error("the pickle reads an unset memo");
    return it->second;
  }
  std::vector<Ref> pop_to_mark() {
    std::vector<Ref> out;
    for (;;) {
      Ref v = pop();
      if (v->kind == Value::Kind::kMark) break;
      out.push_back(std::move(v));
    }
    return {out.rbegin(), out.rend()};
  }
  // ('storage', torch.FloatStorage, key, device, numel)
  void persistent_id() {
    const Ref pid = pop();
    if (pid->kind != Value::Kind::kTuple || pid->items.size() < 3 ||
        pid->items[1]->kind != Value::Kind::kGlobal || pid->items[2]->kind != Value::Kind::kString)
      throw std::runtime_error("a persistent id that names no storage");
    auto s = make(Value::Kind::kStorage);
    s->dtype = pid->items[1]->s;
    s->s = pid->items[2]->s;
    push(s);
  }
  void reduce() {
    const Ref args = pop();
    const Ref fn = pop();
    if (fn->s == "collections.OrderedDict") {
      push(make(Value::Kind::kDict));
    } else if (fn->s == "torch._utils._rebuild_tensor_v2" && args->items.size() >= 4 &&
               args->items[0]->kind == Value::Kind::kStorage) {
      auto t = make(Value::Kind::kTensor);
      t->storage = args->items[0];
      t->offset = as_int(args->items[1]);
      t->sizes = as_ints(args->items[2]);
      t->strides = as_ints(args->items[3]);
      push(t);
    } else {
      throw std::runtime_error("the pickle calls " + fn->s + ", which a model file never does");
    }
  }
};

ArchiveTensor read_tensor(const Value& t, const StoredZip& zip, const std::string& prefix) {
  if (t.storage->dtype != "torch.FloatStorage")
    throw std::runtime_error("a tensor of " + t.storage->dtype + "; expected torch.FloatStorage");
  ArchiveTensor out;
  out.sizes = t.sizes;
  std::int64_t numel = 1, stride = 1;
  for (std::size_t d = t.sizes.size(); d-- > 0;) {
    if (d < t.strides.size() && t.sizes[d] > 1 && t.strides[d] != stride)
      throw std::runtime_error("a tensor that is not contiguous");
    stride *= t.sizes[d];
  }
  for (std::int64_t s : t.sizes) numel *= s;
  const auto bytes = zip.read(prefix + "data/" + t.storage->s);
  if (!bytes) throw std::runtime_error("no entry " + prefix + "data/" + t.storage->s);
  const std::size_t from = static_cast<std::size_t>(t.offset) * sizeof(float),
                    size = static_cast<std::size_t>(numel) * sizeof(float);
  if (t.offset < 0 || from + size > bytes->size())
    throw std::runtime_error("a tensor larger than its storage");
  out.values.resize(static_cast<std::size_t>(numel));
  std::memcpy(out.values.data(), bytes->data() + from, size);  // little-endian, as written
  return out;
}

// Model files nest a few modules deep; a damaged pickle may refer to an object inside itself.
constexpr int kMaxModuleDepth = 32;

ArchiveModule to_module(const Value& obj, const StoredZip& zip, const std::string& prefix,
                        int depth = 0) {
  if (depth > kMaxModuleDepth) throw std::runtime_error("modules nested too deep");
  ArchiveModule m;
  for (const auto& [k, v] : obj.entries) {
    if (k->kind != Value::Kind::kString)
      throw std::runtime_error("a module attribute with no name");
    switch (v->kind) {
      case Value::Kind::kObject:
        m.children.emplace_back(k->s, to_module(*v, zip, prefix, depth + 1));
        break;
      case Value::Kind::kTensor: m.tensors.emplace_back(k->s, read_tensor(*v, zip, prefix)); break;
      case Value::Kind::kString: m.strings.emplace_back(k->s, v->s); break;
      default: break;  // numbers and flags: model files keep theirs in the metadata string
    }
  }
  return m;
}

template <typename T>
const T* find(const std::vector<std::pair<std::string, T>>& v, const std::string& name) {
  for (const auto& [k, x] : v)
    if (k == name) return &x;
  return nullptr;
}

}  // namespace

const ArchiveTensor* ArchiveModule::tensor(const std::string& name) const {
  return find(tensors, name);
}
const std::string* ArchiveModule::string(const std::string& name) const {
  return find(strings, name);
}
const ArchiveModule* ArchiveModule::child(const std::string& name) const {
  return find(children, name);
}

ArchiveModule read_torch_archive(const std::string& path) {
  try {
    const StoredZip zip(path);
    // Every entry sits under one folder (archive/ as LibTorch writes it); data.pkl is the module.
    std::string prefix;
    for (const auto& [name, at] : zip.entries())
      if (const auto slash = name.find('/');
          slash != std::string::npos && name.substr(slash + 1) == "data.pkl")
        prefix = name.substr(0, slash + 1);
    const auto pickle = zip.read(prefix + "data.pkl");
    if (prefix.empty() || !pickle) throw std::runtime_error("no data.pkl in the archive");
    const Ref root = Unpickler(*pickle).run();
    if (root->kind != Value::Kind::kObject) throw std::runtime_error("the archive holds no module");
    return to_module(*root, zip, prefix);
  } catch (const std::runtime_error& e) {
    throw InputError(
        {path, 0, "policy"},
        std::string("not a mirage model file (not a LibTorch archive: ") + e.what() + ")");
  }
}

}  // namespace mirage::learned
