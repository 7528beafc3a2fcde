//! URI reference resolution (RFC 3986 §5.2), enough for `$id` and `$ref`.

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Parts {
    scheme: Option<String>,
    authority: Option<String>,
    path: String,
    query: Option<String>,
    fragment: Option<String>,
}

/// RFC 3986 appendix B.
fn split(s: &str) -> Parts {
    let mut rest = s;
    let mut p = Parts::default();
    if let Some(i) = rest.find('#') {
        p.fragment = Some(rest[i + 1..].to_string());
        rest = &rest[..i];
    }
    if let Some(i) = rest.find('?') {
        p.query = Some(rest[i + 1..].to_string());
        rest = &rest[..i];
    }
    if let Some(i) = rest.find(':') {
        let scheme = &rest[..i];
        if !scheme.is_empty()
            && scheme.chars().next().unwrap().is_ascii_alphabetic()
            && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
            && !rest[..i].contains('/')
        {
            p.scheme = Some(scheme.to_string());
            rest = &rest[i + 1..];
        }
    }
    if let Some(r) = rest.strip_prefix("//") {
        let end = r.find('/').unwrap_or(r.len());
        p.authority = Some(r[..end].to_string());
        rest = &r[end..];
    }
    p.path = rest.to_string();
    p
}

fn join(p: &Parts) -> String {
    let mut s = String::new();
    if let Some(sc) = &p.scheme {
        s.push_str(sc);
        s.push(':');
    }
    if let Some(a) = &p.authority {
        s.push_str("//");
        s.push_str(a);
    }
    s.push_str(&p.path);
    if let Some(q) = &p.query {
        s.push('?');
        s.push_str(q);
    }
    if let Some(f) = &p.fragment {
        s.push('#');
        s.push_str(f);
    }
    s
}

fn remove_dot_segments(path: &str) -> String {
    let mut input = path.to_string();
    let mut out: Vec<String> = Vec::new();
    let absolute = input.starts_with('/');
    if absolute {
        input.remove(0);
    }
    let segs: Vec<&str> = input.split('/').collect();
    let n = segs.len();
    for (i, seg) in segs.iter().enumerate() {
        match *seg {
            "." => {
                if i + 1 == n {
                    out.push(String::new());
                }
            }
            ".." => {
                out.pop();
                if i + 1 == n {
                    out.push(String::new());
                }
            }
            s => out.push(s.to_string()),
        }
    }
    let joined = out.join("/");
    if absolute {
        format!("/{joined}")
    } else {
        joined
    }
}

fn merge(base: &Parts, rel_path: &str) -> String {
    if base.authority.is_some() && base.path.is_empty() {
        return format!("/{rel_path}");
    }
    match base.path.rfind('/') {
        Some(i) => format!("{}{}", &base.path[..=i], rel_path),
        None => rel_path.to_string(),
    }
}

/// Resolves `reference` against the absolute URI `base`.
pub fn resolve(base: &str, reference: &str) -> String {
    let r = split(reference);
    let b = split(base);
    let t = if r.scheme.is_some() {
        Parts { path: remove_dot_segments(&r.path), ..r }
    } else if r.authority.is_some() {
        Parts { scheme: b.scheme, path: remove_dot_segments(&r.path), ..r }
    } else if r.path.is_empty() {
        Parts {
            scheme: b.scheme,
            authority: b.authority,
            path: b.path.clone(),
            query: if r.query.is_some() { r.query } else { b.query },
            fragment: r.fragment,
        }
    } else {
        let path = if r.path.starts_with('/') { remove_dot_segments(&r.path) } else { remove_dot_segments(&merge(&b, &r.path)) };
        Parts { scheme: b.scheme, authority: b.authority, path, query: r.query, fragment: r.fragment }
    };
    join(&t)
}

/// Splits off the fragment: `("http://x/y", Some("frag"))`. An empty
/// fragment (`x#`) counts as none.
pub fn split_fragment(uri: &str) -> (&str, Option<&str>) {
    match uri.find('#') {
        Some(i) if i + 1 < uri.len() => (&uri[..i], Some(&uri[i + 1..])),
        Some(i) => (&uri[..i], None),
        None => (uri, None),
    }
}

/// Decodes `%XX` escapes (JSON pointers in URI fragments are
/// percent-encoded).
pub fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3986_examples() {
        let base = "http://a/b/c/d;p?q";
        assert_eq!(resolve(base, "g"), "http://a/b/c/g");
        assert_eq!(resolve(base, "../g"), "http://a/b/g");
        assert_eq!(resolve(base, "#s"), "http://a/b/c/d;p?q#s");
        assert_eq!(resolve(base, "/g"), "http://a/g");
        assert_eq!(resolve(base, "//g"), "http://g");
        assert_eq!(resolve(base, "../../../g"), "http://a/g");
        assert_eq!(resolve("urn:uuid:deadbeef", "#/a"), "urn:uuid:deadbeef#/a");
        assert_eq!(split_fragment("http://x/y#"), ("http://x/y", None));
        assert_eq!(percent_decode("%25a%22"), "%a\"");
    }
}
