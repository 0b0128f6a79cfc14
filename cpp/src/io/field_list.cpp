// Field lists of result objects (field_list.hpp).
#include "io/field_list.hpp"

namespace trainmem {

void Field::put_into(nlohmann::json& o) const {
  namespace d = json_fields_detail;
  switch (kind_) {
    case Kind::boolean:
      return d::put_bool(o, key_, b_);
    case Kind::u64:
      return d::put_u64(o, key_, u_);
    case Kind::i64:
      return d::put_i64(o, key_, i_);
    case Kind::f64:
      return d::put_f64(o, key_, d_);
    case Kind::str:
      return d::put_str(o, key_, *s_);
    case Kind::cstr:
      return d::put_cstr(o, key_, c_);
    case Kind::null:
      return d::put_json(o, key_, nlohmann::json(nullptr));
    case Kind::json:
      return d::put_json(o, key_, nlohmann::json(*j_));
    case Kind::text:
      return d::put_json(o, key_, nlohmann::json(*t_));
  }
}

void put_fields(nlohmann::json& o, std::initializer_list<Field> fields) {
  for (const Field& f : fields) f.put_into(o);
}

}  // namespace trainmem
