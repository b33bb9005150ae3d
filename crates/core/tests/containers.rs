//! Containers: Str, Bytes, Array and Map (insertion order, index for > 8 entries, string keys
//! by content, object keys by identity), and their global functions.

mod common;

use tether_core::alloc::live_objects;
use tether_core::testing::Pair;
use tether_core::{Any, AnyView, ArrayObj, BytesObj, MapObj, StrObj, TypeIndex};

fn pair(i: i64) -> Any {
    Any::object(Pair::new(Any::int(i), Any::none()).into())
}

#[test]
fn str_and_bytes_objects_hold_their_contents() {
    let _g = common::serial();
    let s = StrObj::new("héllo wörld, longer than seven");
    assert_eq!(s.as_str(), "héllo wörld, longer than seven");
    let b = BytesObj::new(&[0, 1, 2, 255, 0, 9, 9, 9, 9]);
    assert_eq!(b.as_bytes(), &[0, 1, 2, 255, 0, 9, 9, 9, 9]);
    assert_eq!(StrObj::new("").as_str(), "");
    assert_eq!(BytesObj::new(&[]).as_bytes(), &[] as &[u8]);
}

#[test]
fn array_get_supports_negative_indices_and_reports_out_of_range() {
    let _g = common::serial();
    let base = live_objects();
    let arr = ArrayObj::new(vec![pair(0), Any::int(1), Any::str("two")]);
    assert_eq!((arr.len(), arr.is_empty()), (3, false));
    assert_eq!(arr.get(1).unwrap().view().as_int(), Some(1));
    assert_eq!(arr.get(-1).unwrap().as_str(), Some("two"));
    assert_eq!(arr.get(-3).unwrap(), &arr.items()[0]);
    assert_eq!(arr.get(0).unwrap(), arr.get(0).unwrap(), "same object each time");
    for bad in [3, 100, -4, i64::MIN] {
        let e = arr.get(bad).unwrap_err();
        assert_eq!(e.kind(), "IndexError", "index {bad}");
        assert!(e.message().contains(&bad.to_string()), "{}", e.message());
    }
    assert!(ArrayObj::new(vec![]).is_empty());
    drop(arr);
    assert_eq!(live_objects(), base, "items released with the array");
}

#[test]
fn small_maps_keep_insertion_order_and_last_value_wins() {
    let _g = common::serial();
    let m = MapObj::new(vec![(Any::str("b"), Any::int(1)), (Any::str("a"), Any::int(2)), (Any::str("b"), Any::int(3))]);
    assert_eq!(m.len(), 2);
    let keys: Vec<_> = m.entries().map(|(k, _)| k.as_str().unwrap().to_string()).collect();
    assert_eq!(keys, ["b", "a"]);
    assert_eq!(m.get(&AnyView::raw_str("b")).unwrap().view().as_int(), Some(3));
    assert!(m.get(&AnyView::raw_str("c")).is_none());
    assert!(MapObj::new(vec![]).is_empty());
}

#[test]
fn large_maps_use_the_index_and_find_every_key() {
    let _g = common::serial();
    let base = live_objects();
    let n = common::iters(200, 20) as i64;
    let objects: Vec<Any> = (0..n).map(pair).collect();
    let mut entries = Vec::new();
    for i in 0..n {
        entries.push((Any::int(i), Any::int(i * 10)));
        entries.push((Any::str(&format!("key number {i}")), Any::int(-i)));
        entries.push((objects[i as usize].clone(), Any::int(i + 1000)));
    }
    let m = MapObj::new(entries);
    assert_eq!(m.len(), 3 * n as usize);
    for i in 0..n {
        assert_eq!(m.get(&AnyView::int(i)).unwrap().view().as_int(), Some(i * 10));
        let key = format!("key number {i}");
        assert_eq!(m.get(&AnyView::raw_str(&key)).unwrap().view().as_int(), Some(-i), "strings by content");
        assert_eq!(m.get(&objects[i as usize].view()).unwrap().view().as_int(), Some(i + 1000), "objects by identity");
    }
    assert!(m.get(&AnyView::int(n)).is_none());
    assert!(m.get(&pair(0).view()).is_none(), "an equal-looking but different object is another key");
    let order: Vec<i64> = m.entries().take(6).map(|(_, v)| v.view().as_int().unwrap()).collect();
    assert_eq!(order, [0, 0, 1000, 10, -1, 1001], "insertion order");
    drop((m, objects));
    assert_eq!(live_objects(), base);
}

#[test]
fn string_keys_match_across_inline_view_and_object_forms() {
    let _g = common::serial();
    let long = "a key longer than seven bytes";
    let m = MapObj::new(
        (0..12)
            .map(|i| (Any::str(&format!("{long} {i}")), Any::int(i)))
            .chain([(Any::str("short"), Any::int(99))])
            .collect(),
    );
    let owned = Any::str(&format!("{long} 3"));
    assert_eq!(owned.type_index(), TypeIndex::STR);
    assert_eq!(m.get(&owned.view()).unwrap().view().as_int(), Some(3), "a different Str object, same content");
    assert_eq!(m.get(&AnyView::raw_str("short")).unwrap().view().as_int(), Some(99), "view vs inline");
    assert!(m.get(&Any::bytes(b"short").view()).is_none(), "bytes never equal str");
}

#[test]
fn container_globals_are_registered() {
    let _g = common::serial();
    let arr = common::call("tether.Array", &[AnyView::int(1), AnyView::raw_str("x")]).unwrap();
    assert_eq!(arr.type_index(), TypeIndex::ARRAY);
    assert_eq!(common::call("tether.ArraySize", &[arr.view()]).unwrap().view().as_int(), Some(2));
    assert_eq!(common::call("tether.ArrayGetItem", &[arr.view(), AnyView::int(-1)]).unwrap().as_str(), Some("x"));
    let e = common::call("tether.ArrayGetItem", &[arr.view(), AnyView::int(2)]).unwrap_err();
    assert_eq!(e.kind(), "IndexError");
    let e = common::call("tether.ArraySize", &[AnyView::int(1)]).unwrap_err();
    assert_eq!(e.kind(), "TypeError");

    let m = common::call("tether.Map", &[AnyView::raw_str("k"), AnyView::int(1), AnyView::int(2), AnyView::int(3)])
        .unwrap();
    assert_eq!(m.type_index(), TypeIndex::MAP);
    assert_eq!(common::call("tether.MapSize", &[m.view()]).unwrap().view().as_int(), Some(2));
    assert_eq!(common::call("tether.MapGetItem", &[m.view(), AnyView::raw_str("k")]).unwrap().view().as_int(), Some(1));
    assert_eq!(common::call("tether.MapContains", &[m.view(), AnyView::int(2)]).unwrap().view().as_bool(), Some(true));
    assert_eq!(common::call("tether.MapContains", &[m.view(), AnyView::int(9)]).unwrap().view().as_bool(), Some(false));
    let e = common::call("tether.MapGetItem", &[m.view(), AnyView::int(9)]).unwrap_err();
    assert_eq!(e.kind(), "KeyError");
    let keys = common::call("tether.MapKeys", &[m.view()]).unwrap();
    let keys = keys.view().downcast_ref::<ArrayObj>().unwrap().items().to_vec();
    assert_eq!((keys[0].as_str(), keys[1].view().as_int()), (Some("k"), Some(2)));
    let values = common::call("tether.MapValues", &[m.view()]).unwrap();
    assert_eq!(values.view().downcast_ref::<ArrayObj>().unwrap().len(), 2);
    let e = common::call("tether.Map", &[AnyView::int(1)]).unwrap_err();
    assert_eq!(e.kind(), "ValueError", "odd argument count");
}
