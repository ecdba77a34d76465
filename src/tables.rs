//! Tables de-identified by column: CSV, TSV and JSON Lines keep their shape (header,
//! column order, quoting style, line endings, multi-line cells, every other key of a JSON object) while the
//! columns the user names are handled by kind.
//!
//! | kind | what the cell becomes |
//! |---|---|
//! | `text` | the cell through the engine and the request's method or policy |
//! | `id` | `id_` + 16 hex digits of HMAC-SHA256 under the per-install key: the same value gives the same pseudonym in every file, so rows still link |
//! | `date` | the date moved by the row's offset, in its own format and precision (a time of day, a weekday, `20210304` and ISO timestamps with a zone are read); a year alone is kept (Safe Harbor keeps years); a cell that is not a date is emptied and counted |
//! | `redact` | emptied |
//!
//! In JSON Lines a value need not be a string, and a named column never lets one through
//! unchanged: a number or a boolean is handled as its JSON text (`4455667`, `true`) and
//! written back as a string when it changes; `redact` empties any value whatever its type;
//! an array or an object under a `text`, `id` or `date` column (or the subject column)
//! fails the file, naming the line and the column, since its parts cannot be handled as one
//! value. A `null` or a missing key stays as it is, but a named key that no line has is a
//! mistyped name and fails the file (its values would pass through unread). Values and lines
//! the columns do not change are written back as they were read ([`RawValue`]): a number
//! keeps its spelling and precision (an id past 2^64 is pseudonymised from its digits), and
//! line endings and blank lines stay.
//!
//! A column name that appears more than once in a CSV or TSV header (a join's export) is
//! handled by its kind in every place it appears.
//!
//! A row with more fields than the header fails the file, naming its line: its fields
//! cannot be told apart (an unquoted comma in a note shifts every field after it), so no
//! column's kind could be trusted. A shorter row is written as it was read.
//!
//! A UTF-8 byte-order mark at the start of a file is kept.
//!
//! Columns not named are copied as they are: naming the PHI columns is the user's
//! statement about the table. With a subject column, each row's value there is its
//! subject: that subject's dates move by one offset and its surrogates are its own, in
//! every file (the subject column itself is kept unless it is also named).
//!
//! Like [`crate::fhir`], this module only reads, lists the texts and writes; the caller
//! finds the entities (the engine) in between.

use std::borrow::Cow;
use std::collections::HashMap;

use indexmap::IndexMap;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::deid::{DeidOptions, Deidentifier, HashKey, SubjectKey};
use crate::detect::Span;

/// Errors reading a table or a column list. Messages name columns and lines, never cells.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TableError {
    /// Returned when `--columns` is not `name=kind,…`.
    #[error("--columns entry {0} is not NAME=text|id|date|redact")]
    Spec(usize),
    /// Returned when `--columns` names one column twice.
    #[error("--columns names column {0:?} more than once")]
    Repeated(String),
    /// Returned when a named column is not in the table.
    #[error("column {0:?} is not in the table's header")]
    NoColumn(String),
    /// Returned when a named column (or the subject column) is a key of no line of a JSON
    /// Lines file: a mistyped name would let its column through unread.
    #[error("column {0:?} is a key of no line of the file (names tell case apart)")]
    NoKey(String),
    /// Returned when the subject column appears more than once in the header.
    #[error("the subject column {0:?} appears more than once in the table's header")]
    SubjectRepeated(String),
    /// Returned when a CSV or TSV row has more fields than the header: its fields cannot be
    /// matched to the columns.
    #[error("line {line}: {fields} fields, the header has {header}")]
    LongRow {
        /// 1-based line where the row starts.
        line: u64,
        /// Fields in the row.
        fields: usize,
        /// Fields in the header.
        header: usize,
    },
    /// Returned when a CSV or TSV row cannot be read.
    #[error("line {line}: not a valid {format} row")]
    Row {
        /// 1-based line.
        line: u64,
        /// `CSV` or `TSV`.
        format: &'static str,
    },
    /// Returned when a JSON Lines line is not a JSON object.
    #[error("line {0} is not a JSON object")]
    NotObject(usize),
    /// Returned when a JSON Lines value under a `text`, `id` or `date` column, or under the
    /// subject column, is an array or an object (only `redact` applies to one).
    #[error(
        "line {line}: column {column:?} holds a JSON array or object; only redact applies to one"
    )]
    Nested {
        /// 1-based line.
        line: usize,
        /// The column name, as the user gave it.
        column: String,
    },
}

/// How a column is handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Free text through the engine.
    Text,
    /// A keyed pseudonym.
    Id,
    /// A shifted date.
    Date,
    /// Emptied.
    Redact,
}

/// The `--columns` list: column name → kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Columns(pub Vec<(String, Kind)>);

impl Columns {
    /// Parses `note=text,mrn=id,visit=date` (a name alone is `text`).
    ///
    /// # Errors
    /// [`TableError::Spec`] naming the bad entry (1-based); [`TableError::Repeated`] for a
    /// column named twice (which kind would apply is not for us to guess).
    pub fn parse(spec: &str) -> Result<Columns, TableError> {
        let mut out = Vec::new();
        for (i, entry) in spec.split(',').enumerate() {
            let entry = entry.trim();
            if entry.is_empty() {
                continue;
            }
            let (name, kind) = entry.rsplit_once('=').unwrap_or((entry, "text"));
            let kind = match kind.trim() {
                "text" => Kind::Text,
                "id" => Kind::Id,
                "date" => Kind::Date,
                "redact" => Kind::Redact,
                _ => return Err(TableError::Spec(i + 1)),
            };
            let name = name.trim();
            if name.is_empty() {
                return Err(TableError::Spec(i + 1));
            }
            if out.iter().any(|(n, _)| n == name) {
                return Err(TableError::Repeated(name.to_owned()));
            }
            out.push((name.to_owned(), kind));
        }
        if out.is_empty() {
            return Err(TableError::Spec(1));
        }
        Ok(Columns(out))
    }
}

/// The file formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Comma-separated, with a header row.
    Csv,
    /// Tab-separated, with a header row.
    Tsv,
    /// One JSON object per line.
    Jsonl,
}

impl Format {
    /// The format of a file by its extension (`.csv`, `.tsv`, `.jsonl`).
    pub fn of_extension(ext: &str) -> Option<Format> {
        match ext.to_ascii_lowercase().as_str() {
            "csv" => Some(Format::Csv),
            "tsv" | "tab" => Some(Format::Tsv),
            "jsonl" => Some(Format::Jsonl),
            _ => None,
        }
    }
}

/// One row: CSV/TSV cells, or a JSON Lines line.
#[derive(Clone, Debug)]
enum Row {
    Cells(Vec<String>),
    Object(JsonLine),
}

/// A JSON Lines line: its object with each value as written (a number keeps its spelling
/// and precision: `4.10`, `1E5`, an id past 2^64), the line as read and its line ending. A
/// line none of whose named values changes is written back byte for byte; a changed one
/// is written compactly, the other values as they were written. A blank line is kept as
/// it is (`map` is `None`).
#[derive(Clone, Debug)]
struct JsonLine {
    map: Option<IndexMap<String, Box<RawValue>>>,
    line: String,
    end: String,
    changed: bool,
}

/// A table read into memory.
#[derive(Clone, Debug)]
pub struct Table {
    format: Format,
    header: Vec<String>,
    rows: Vec<Row>,
    /// The named columns with their positions (CSV/TSV; a name in the header twice is
    /// here twice) or keys (JSON Lines).
    columns: Vec<(String, usize, Kind)>,
    subject: Option<(String, usize)>,
    /// How a CSV or TSV file was written, so that it is written back the same way.
    layout: Layout,
    /// The file began with a UTF-8 byte-order mark (spreadsheets write one and need it to
    /// read the file back as UTF-8).
    bom: bool,
    /// `date` cells emptied by the last [`Table::deidentify`] because they are not dates.
    dates_emptied: usize,
}

/// The writing conventions of a delimited file that its reader does not keep: the line
/// ending (`\r\n` from spreadsheet exports, `\n`) and whether every field is quoted (a
/// `QUOTE_ALL` writer) or only those that need it. Read from the header line, which every
/// such file has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Layout {
    crlf: bool,
    quote_all: bool,
}

impl Layout {
    fn of(text: &str, format: Format) -> Layout {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let first = text.split('\n').next().unwrap_or("");
        let crlf = text.contains('\n') && first.ends_with('\r');
        // The header's fields as written (quotes kept): a header names columns, so a
        // quote inside one (which would need a proper parse) is not expected here.
        let header = first.strip_suffix('\r').unwrap_or(first);
        let quote_all = !header.is_empty()
            && header.split(char::from(delimiter(format))).all(|f| {
                let f = f.trim();
                f.len() >= 2 && f.starts_with('"') && f.ends_with('"')
            });
        Layout { crlf, quote_all }
    }
}

impl Table {
    /// Reads `text` and checks that every named column (and the subject column) exists.
    ///
    /// # Errors
    /// [`TableError`] naming the line or the column.
    pub fn read(
        text: &str,
        format: Format,
        columns: &Columns,
        subject_column: Option<&str>,
    ) -> Result<Table, TableError> {
        let (bom, text) = match text.strip_prefix('\u{feff}') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (header, rows) = match format {
            Format::Csv | Format::Tsv => read_delimited(text, format)?,
            Format::Jsonl => {
                let scalar: Vec<&str> = columns
                    .0
                    .iter()
                    .filter(|(_, kind)| *kind != Kind::Redact)
                    .map(|(name, _)| name.as_str())
                    .chain(subject_column)
                    .collect();
                read_jsonl(text, &scalar)?
            }
        };
        // Every place a name appears in the header: a joined export may repeat one. A JSON
        // Lines key need not be on every line, but one that is on none is a name the user
        // mistyped (`notes`, `MRN` for `mrn`): its column would pass through unread.
        let objects = rows.iter().filter(|r| r.is_object()).count();
        let positions = |name: &str| -> Result<Vec<usize>, TableError> {
            let at: Vec<usize> = match format {
                Format::Jsonl if objects > 0 && !rows.iter().any(|r| r.has_key(name)) => {
                    return Err(TableError::NoKey(name.to_owned()))
                }
                Format::Jsonl => vec![0],
                _ => (0..header.len()).filter(|i| header[*i] == name).collect(),
            };
            if at.is_empty() {
                return Err(TableError::NoColumn(name.to_owned()));
            }
            Ok(at)
        };
        let mut named = Vec::new();
        for (name, kind) in &columns.0 {
            for at in positions(name)? {
                named.push((name.clone(), at, *kind));
            }
        }
        let subject = match subject_column {
            Some(s) => match positions(s)?.as_slice() {
                [at] => Some((s.to_owned(), *at)),
                _ => return Err(TableError::SubjectRepeated(s.to_owned())),
            },
            None => None,
        };
        Ok(Table {
            format,
            header,
            rows,
            columns: named,
            subject,
            layout: Layout::of(text, format),
            bom,
            dates_emptied: 0,
        })
    }

    /// The number of data rows.
    pub fn rows(&self) -> usize {
        self.rows.iter().filter(|r| !r.is_blank()).count()
    }

    /// The `date` cells the last [`Table::deidentify`] emptied because they are not dates
    /// (a count the caller reports: a silently emptied column is data lost unseen).
    pub fn dates_emptied(&self) -> usize {
        self.dates_emptied
    }

    /// A cell's value: a JSON string as it is, any other JSON value as its JSON text (an
    /// array or an object only reaches `redact`: [`Table::read`] refuses it elsewhere);
    /// `None` for a missing cell or key and for `null`.
    fn cell<'a>(row: &'a Row, name: &str, at: usize) -> Option<Cow<'a, str>> {
        match row {
            Row::Cells(c) => c.get(at).map(|s| Cow::Borrowed(s.as_str())),
            Row::Object(l) => {
                let raw = l.map.as_ref()?.get(name)?.get().trim();
                if raw == "null" {
                    return None;
                }
                if raw.starts_with('"') {
                    return serde_json::from_str::<String>(raw).ok().map(Cow::Owned);
                }
                Some(Cow::Owned(raw.to_owned()))
            }
        }
    }

    /// The text cells, row by row, in the order [`Table::deidentify`] expects their
    /// entities.
    pub fn texts(&self) -> Vec<String> {
        let mut out = Vec::new();
        for row in self.rows.iter().filter(|r| !r.is_blank()) {
            for (name, at, kind) in &self.columns {
                if *kind == Kind::Text {
                    out.push(Self::cell(row, name, *at).unwrap_or_default().into_owned());
                }
            }
        }
        out
    }

    /// De-identifies the table in place: `spans[i]` are the entities of `texts()[i]`.
    /// `opts` is the method or policy of text cells; `subject` the file's subject when
    /// there is no subject column. Returns the number of cells changed.
    pub fn deidentify(
        &mut self,
        spans: &[Vec<Span>],
        key: &HashKey,
        opts: &DeidOptions,
        subject: Option<SubjectKey>,
    ) -> usize {
        let mut deids: HashMap<Option<String>, Deidentifier<rand::rngs::StdRng>> = HashMap::new();
        let mut next = 0usize;
        let mut changed = 0usize;
        let mut dates_emptied = 0usize;
        let columns = self.columns.clone();
        // A shifted date column beside a text whose dates are cut to years: the years are
        // the shifted dates' (see `DeidOptions::shifted_years`).
        let shifted_years = columns.iter().any(|(_, _, k)| *k == Kind::Date);
        for row in self.rows.iter_mut().filter(|r| !r.is_blank()) {
            let who = self
                .subject
                .as_ref()
                .and_then(|(name, at)| Self::cell(row, name, *at))
                .map(Cow::into_owned);
            let deid = deids.entry(who.clone()).or_insert_with(|| {
                use rand::SeedableRng;
                let subject = match &who {
                    Some(s) => Some(key.subject(s)),
                    None => subject.clone(),
                };
                Deidentifier::new(
                    DeidOptions {
                        subject,
                        shifted_years,
                        ..opts.clone()
                    },
                    key,
                    rand::rngs::StdRng::from_os_rng(),
                )
            });
            for (name, at, kind) in &columns {
                let value = Self::cell(row, name, *at).map(Cow::into_owned);
                let new = match (kind, &value) {
                    (Kind::Text, v) => {
                        let found = spans.get(next).map(Vec::as_slice).unwrap_or(&[]);
                        next += 1;
                        v.as_ref().map(|v| deid.apply(v, found).text)
                    }
                    (_, None) => None,
                    (Kind::Id, Some(v)) if v.is_empty() => None,
                    (Kind::Id, Some(v)) => {
                        let tag = key.audit_hash(&format!("phiguard-table-id\0{v}"));
                        Some(format!("id_{}", &tag[tag.len() - 16..]))
                    }
                    (Kind::Date, Some(v)) if v.trim().is_empty() => None,
                    // A year alone is kept: Safe Harbor keeps years, and a year moved by
                    // days would say little but the offset.
                    (Kind::Date, Some(v)) if is_year(v) => None,
                    (Kind::Date, Some(v)) => Some(deid.shift_date(v).unwrap_or_else(|| {
                        dates_emptied += 1;
                        String::new()
                    })),
                    (Kind::Redact, Some(_)) => Some(String::new()),
                };
                // An unchanged value keeps its JSON type (a number the engine found nothing
                // in stays a number); a changed one is written as a string.
                if let Some(new) = new {
                    if value.as_deref() != Some(new.as_str()) {
                        changed += 1;
                        set(row, name, *at, new);
                    }
                }
            }
        }
        self.dates_emptied = dates_emptied;
        changed
    }

    /// The table written back in its format.
    ///
    /// # Errors
    /// Never in practice (writing to memory); a CSV writer error is reported as a row error.
    pub fn write(&self) -> Result<String, TableError> {
        match self.format {
            Format::Jsonl => {
                let mut out = String::new();
                if self.bom {
                    out.push('\u{feff}');
                }
                for row in &self.rows {
                    if let Row::Object(l) = row {
                        match (&l.map, l.changed) {
                            (Some(m), true) => {
                                out.push('{');
                                for (i, (k, v)) in m.iter().enumerate() {
                                    if i > 0 {
                                        out.push(',');
                                    }
                                    out.push_str(&Value::String(k.clone()).to_string());
                                    out.push(':');
                                    out.push_str(v.get());
                                }
                                out.push('}');
                            }
                            _ => out.push_str(&l.line),
                        }
                        out.push_str(&l.end);
                    }
                }
                Ok(out)
            }
            Format::Csv | Format::Tsv => {
                let err = |_| TableError::Row {
                    line: 0,
                    format: name_of(self.format),
                };
                // Flexible: a row shorter than the header (which the reader accepts) is
                // written as it was read.
                let mut w = csv::WriterBuilder::new()
                    .delimiter(delimiter(self.format))
                    .flexible(true)
                    .terminator(if self.layout.crlf {
                        csv::Terminator::CRLF
                    } else {
                        csv::Terminator::Any(b'\n')
                    })
                    .quote_style(if self.layout.quote_all {
                        csv::QuoteStyle::Always
                    } else {
                        csv::QuoteStyle::Necessary
                    })
                    .from_writer(if self.bom {
                        "\u{feff}".as_bytes().to_vec()
                    } else {
                        Vec::new()
                    });
                w.write_record(&self.header).map_err(err)?;
                for row in &self.rows {
                    if let Row::Cells(c) = row {
                        w.write_record(c).map_err(err)?;
                    }
                }
                let bytes = w.into_inner().map_err(|_| TableError::Row {
                    line: 0,
                    format: name_of(self.format),
                })?;
                Ok(String::from_utf8_lossy(&bytes).into_owned())
            }
        }
    }
}

/// A year alone (`2021`), as a date column may hold one.
fn is_year(v: &str) -> bool {
    let v = v.trim();
    v.len() == 4 && v.bytes().all(|b| b.is_ascii_digit()) && !v.starts_with('0')
}

fn set(row: &mut Row, name: &str, at: usize, value: String) {
    match row {
        Row::Cells(c) => {
            if let Some(cell) = c.get_mut(at) {
                *cell = value;
            }
        }
        Row::Object(l) => {
            let Some(m) = l.map.as_mut() else { return };
            let json = Value::String(value).to_string();
            if let Ok(raw) = RawValue::from_string(json) {
                m.insert(name.to_owned(), raw);
                l.changed = true;
            }
        }
    }
}

fn delimiter(format: Format) -> u8 {
    if format == Format::Tsv {
        b'\t'
    } else {
        b','
    }
}

fn name_of(format: Format) -> &'static str {
    match format {
        Format::Tsv => "TSV",
        _ => "CSV",
    }
}

fn read_delimited(text: &str, format: Format) -> Result<(Vec<String>, Vec<Row>), TableError> {
    let mut r = csv::ReaderBuilder::new()
        .delimiter(delimiter(format))
        .flexible(true)
        .from_reader(text.as_bytes());
    // The line of a record, counted here: after CRLF endings the reader puts a record's
    // start on the `\n` that ends the line before it, so its own line count was one short
    // (found by an outside researcher: `line 2` named the row on line 3).
    let line_at = |p: &csv::Position| -> u64 {
        let at = usize::try_from(p.byte())
            .unwrap_or(usize::MAX)
            .min(text.len());
        let bytes = text.as_bytes();
        let upto = if bytes.get(at) == Some(&b'\n') {
            at + 1
        } else {
            at
        };
        1 + bytes[..upto].iter().filter(|b| **b == b'\n').count() as u64
    };
    let err = |e: csv::Error| TableError::Row {
        line: e.position().map_or(1, line_at),
        format: name_of(format),
    };
    let header: Vec<String> = r
        .headers()
        .map_err(err)?
        .iter()
        .map(str::to_owned)
        .collect();
    let mut rows = Vec::new();
    for rec in r.records() {
        let rec = rec.map_err(err)?;
        // A longer row cannot be matched to the columns: which field is the note and
        // which the phone number is anyone's guess, so no kind can be trusted on it.
        if rec.len() > header.len() {
            return Err(TableError::LongRow {
                line: rec.position().map_or(0, line_at),
                fields: rec.len(),
                header: header.len(),
            });
        }
        rows.push(Row::Cells(rec.iter().map(str::to_owned).collect()));
    }
    Ok((header, rows))
}

/// Reads JSON Lines; a value under one of the `scalar` columns that is an array or an
/// object is refused.
fn read_jsonl(text: &str, scalar: &[&str]) -> Result<(Vec<String>, Vec<Row>), TableError> {
    let mut rows = Vec::new();
    for (i, whole) in text.split_inclusive('\n').enumerate() {
        let body = whole.strip_suffix('\n').unwrap_or(whole);
        let body = body.strip_suffix('\r').unwrap_or(body);
        let end = whole[body.len()..].to_owned();
        if body.trim().is_empty() {
            rows.push(Row::Object(JsonLine {
                map: None,
                line: body.to_owned(),
                end,
                changed: false,
            }));
            continue;
        }
        let Ok(m) = serde_json::from_str::<IndexMap<String, Box<RawValue>>>(body) else {
            return Err(TableError::NotObject(i + 1));
        };
        if let Some(column) = scalar.iter().find(|c| {
            m.get(**c)
                .is_some_and(|v| v.get().trim_start().starts_with(['[', '{']))
        }) {
            return Err(TableError::Nested {
                line: i + 1,
                column: (*column).to_owned(),
            });
        }
        rows.push(Row::Object(JsonLine {
            map: Some(m),
            line: body.to_owned(),
            end,
            changed: false,
        }));
    }
    Ok((Vec::new(), rows))
}

impl Row {
    /// A JSON Lines line that holds an object (not a blank line).
    fn is_object(&self) -> bool {
        matches!(self, Row::Object(JsonLine { map: Some(_), .. }))
    }

    /// A blank JSON Lines line.
    fn is_blank(&self) -> bool {
        matches!(self, Row::Object(JsonLine { map: None, .. }))
    }

    /// Whether a JSON Lines line's object has `key`.
    fn has_key(&self, key: &str) -> bool {
        matches!(self, Row::Object(JsonLine { map: Some(m), .. }) if m.contains_key(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::{Label, Source};

    fn opts() -> DeidOptions {
        DeidOptions::default()
    }

    /// Masks every occurrence of the given words in each text.
    fn spans(texts: &[String], words: &[&str]) -> Vec<Vec<Span>> {
        texts
            .iter()
            .map(|t| {
                let idx = crate::detect::CharIndex::new(t);
                words
                    .iter()
                    .flat_map(|w| {
                        t.match_indices(w)
                            .map(|(b, _)| b)
                            .collect::<Vec<_>>()
                            .into_iter()
                            .map(move |b| (b, *w))
                    })
                    .map(|(b, w)| {
                        let s = idx.char_at_byte(b);
                        Span::new(s, s + w.chars().count(), Label::Person, 0.9, Source::Model)
                    })
                    .collect()
            })
            .collect()
    }

    const CSV: &str = "patient,mrn,visit,note,ward\np1,4471,03/04/2021,\"Seen by Dr. Reyes,\nthen \"\"home\"\"\",A\np2,9921,2021-05-06,Plain note,B\np1,4471,03/09/2021,Reyes again,A\n";

    #[test]
    fn columns_parse_by_kind_and_bad_entries_are_named() {
        let c = Columns::parse("note=text, mrn=id,visit=date,x=redact,other").expect("parses");
        assert_eq!(c.0.len(), 5);
        assert_eq!(c.0[4], ("other".to_owned(), Kind::Text));
        assert_eq!(Columns::parse("a=text,b=nope"), Err(TableError::Spec(2)));
        assert_eq!(Columns::parse(""), Err(TableError::Spec(1)));
    }

    /// A column named twice is refused, naming it. Before, `note=text,note=id` was taken
    /// and one of the two kinds silently won.
    #[test]
    fn a_column_named_twice_in_columns_is_refused() {
        for spec in ["note=text,note=id", "note,mrn=id, note =redact"] {
            let e = Columns::parse(spec).unwrap_err();
            assert_eq!(e, TableError::Repeated("note".into()), "{spec}");
            assert!(e.to_string().contains("\"note\""), "{e}");
        }
    }

    /// A name the header repeats (a join's export) is handled in every place. Before, only
    /// the first `note` was de-identified and the second copied with its PHI.
    #[test]
    fn a_repeated_header_name_is_handled_in_every_column() {
        let text = "patient,note,note,mrn,mrn\np1,Seen by Reyes,Reyes again,4471,4471\n";
        let cols = Columns::parse("note=text,mrn=redact").expect("parses");
        let mut t = Table::read(text, Format::Csv, &cols, Some("patient")).expect("reads");
        let texts = t.texts();
        assert_eq!(texts, ["Seen by Reyes", "Reyes again"]);
        let changed = t.deidentify(
            &spans(&texts, &["Reyes"]),
            &HashKey::from_bytes([1; 32]),
            &opts(),
            None,
        );
        assert_eq!(changed, 4);
        assert_eq!(
            t.write().expect("writes"),
            "patient,note,note,mrn,mrn\np1,Seen by [person],[person] again,,\n"
        );
        // A subject must be one column: which of two would name the row is a guess.
        let cols = Columns::parse("note=text").expect("parses");
        assert_eq!(
            Table::read(text, Format::Csv, &cols, Some("mrn")).err(),
            Some(TableError::SubjectRepeated("mrn".into()))
        );
    }

    /// A row with more fields than the header (an unquoted comma in a note) fails the file,
    /// naming its line and the counts, never a cell. Before, its fields were read
    /// shifted: the note's tail landed in `phone` and the real phone number, in a field no
    /// column names, was copied out.
    #[test]
    fn a_row_longer_than_the_header_fails_naming_its_line() {
        let cols = Columns::parse("note=text,phone=redact").expect("parses");
        for (text, line) in [
            (
                "patient,note,phone\nP1,Seen by Dr Plumbottom, spoke with Arthur,617-555-0142\n",
                2,
            ),
            (
                "patient,note,phone\nP0,\"two\nlines\",1\nP1,a,b,617-555-0142\n",
                4,
            ),
            // CRLF endings: the reader's own count said line 2.
            ("patient,note,phone\r\nP0,a,1\r\nP1,a,b,617-555-0142\r\n", 3),
            ("patient,note,phone\r\nP1,a,b,617-555-0142\r\n", 2),
        ] {
            let e = Table::read(text, Format::Csv, &cols, None).unwrap_err();
            assert_eq!(
                e,
                TableError::LongRow {
                    line,
                    fields: 4,
                    header: 3
                }
            );
            let msg = e.to_string();
            assert_eq!(msg, format!("line {line}: 4 fields, the header has 3"));
        }
        let tsv = "a\tnote\nx\tplain\textra\n";
        assert!(matches!(
            Table::read(
                tsv,
                Format::Tsv,
                &Columns::parse("note").expect("parses"),
                None
            ),
            Err(TableError::LongRow { line: 2, .. })
        ));
    }

    /// Dates as exports write them are moved in their own format and precision; a year
    /// alone is kept; only a cell that is not a date is emptied, and counted. Before, each
    /// of these (but the plain ISO date) was emptied in silence.
    #[test]
    fn date_cells_in_common_formats_are_moved_and_non_dates_counted() {
        let rows = [
            ("2021-03-04T09:30:00", "2021-03-14T09:30:00"),
            ("2021-03-04T14:30:00Z", "2021-03-14T14:30:00Z"),
            ("2021-03-20T14:30:00+02:00", "2021-03-30T14:30:00+02:00"),
            ("2021-03-20 14:30", "2021-03-30 14:30"),
            ("2021", "2021"),
            ("20210304", "20210314"),
            ("Thu 03/04/2021", "Sun 03/14/2021"),
            ("\"Thursday, March 4, 2021\"", "\"Sunday, March 14, 2021\""),
            ("Friday 5 March 2021", "Monday 15 March 2021"),
            ("2021-03-04", "2021-03-14"),
            ("", ""),
            ("not a date", ""),
            ("13/45/2021", ""),
        ];
        let body = |i: usize| -> String {
            let mut s = String::from("patient,visit_date\n");
            for r in &rows {
                s.push_str(&format!("p1,{}\n", if i == 0 { r.0 } else { r.1 }));
            }
            s
        };
        let cols = Columns::parse("visit_date=date").expect("parses");
        let mut t = Table::read(&body(0), Format::Csv, &cols, Some("patient")).expect("reads");
        let shift = DeidOptions {
            date_shift_days: Some(10),
            ..opts()
        };
        t.deidentify(&[], &HashKey::from_bytes([1; 32]), &shift, None);
        assert_eq!(t.write().expect("writes"), body(1));
        assert_eq!(t.dates_emptied(), 2);
    }

    /// Under a policy that cuts a text's dates to years, beside a shifted `date` column, the
    /// text's years are the shifted dates' years. Before, they were the original years: a
    /// year that flipped between two shifted days pinned the patient's offset to the day
    /// (found by an outside researcher).
    #[test]
    fn years_beside_a_shifted_date_column_are_the_shifted_years() {
        let days = ["2021-12-30", "2021-12-31", "2022-01-01", "2022-01-02"];
        let mut csv = String::from("patient,visit,note\n");
        for d in days {
            csv.push_str(&format!("p1,{d},Day note written {d}.\n"));
        }
        let cols = Columns::parse("note=text,visit=date").expect("parses");
        let mut t = Table::read(&csv, Format::Csv, &cols, Some("patient")).expect("reads");
        let texts = t.texts();
        let found: Vec<Vec<Span>> = texts
            .iter()
            .map(|_| vec![Span::new(17, 27, Label::Date, 0.9, Source::Rule)])
            .collect();
        let policy = DeidOptions {
            date_shift_days: Some(-319),
            policy: Some(crate::deid::Policy::parse("hipaa_safe_harbor").expect("policy")),
            ..opts()
        };
        t.deidentify(&found, &HashKey::from_bytes([1; 32]), &policy, None);
        let out = t.write().expect("writes");
        for line in out.lines().skip(1) {
            let cells: Vec<&str> = line.split(',').collect();
            let year = &cells[1][..4];
            assert_eq!(cells[2], format!("Day note written {year}."), "{out}");
        }
        assert!(!out.contains("2022"), "{out}");
    }

    /// A UTF-8 byte-order mark is kept, and the first column is named without it. Before,
    /// the mark was dropped on output.
    #[test]
    fn a_byte_order_mark_is_kept_and_the_first_name_matches_without_it() {
        let cols = Columns::parse("patient_id=id").expect("parses");
        for (text, format) in [
            ("\u{feff}patient_id,note\r\nP1,plain\r\n", Format::Csv),
            (
                "\u{feff}\"patient_id\"\t\"note\"\n\"P1\"\t\"plain\"\n",
                Format::Tsv,
            ),
            (
                "\u{feff}{\"patient_id\":\"P1\",\"note\":\"plain\"}\n",
                Format::Jsonl,
            ),
        ] {
            let mut t = Table::read(text, format, &cols, None).expect("reads");
            t.deidentify(&[], &HashKey::from_bytes([1; 32]), &opts(), None);
            let out = t.write().expect("writes");
            assert!(out.starts_with('\u{feff}'), "{out:?}");
            assert!(!out.contains("P1") && out.contains("id_"), "{out:?}");
            assert!(!out[3..].contains('\u{feff}'), "one mark: {out:?}");
        }
    }

    /// Spreadsheet exports end lines with CRLF and many writers quote every field; a row
    /// may be shorter than the header. Such a file comes back written the same way: byte for
    /// byte where nothing was found (before: LF endings, quotes dropped). A row longer than
    /// the header fails the file (see
    /// `a_row_longer_than_the_header_fails_naming_its_line`).
    #[test]
    fn crlf_endings_quote_all_and_ragged_rows_are_written_as_read() {
        let cols = Columns::parse("note=text").expect("parses");
        for text in [
            "\"a\",\"note\",\"ward\"\r\n\"x\",\"plain\",\"A\"\r\n\"y\",\"also plain\"\r\n",
            "a,note\r\nx,plain\r\ny,\"also, plain\"\r\n",
            "a,note,ward\nx,plain,A\ny,also plain\n",
        ] {
            let mut t = Table::read(text, Format::Csv, &cols, None).expect("reads");
            let texts = t.texts();
            t.deidentify(
                &spans(&texts, &[]),
                &HashKey::from_bytes([1; 32]),
                &opts(),
                None,
            );
            assert_eq!(t.write().expect("writes"), text);
        }
        let text = "\"a\",\"note\"\r\n\"x\",\"Seen by Reyes\"\r\n";
        let mut t = Table::read(text, Format::Csv, &cols, None).expect("reads");
        let texts = t.texts();
        t.deidentify(
            &spans(&texts, &["Reyes"]),
            &HashKey::from_bytes([1; 32]),
            &opts(),
            None,
        );
        assert_eq!(
            t.write().expect("writes"),
            "\"a\",\"note\"\r\n\"x\",\"Seen by [person]\"\r\n"
        );
    }

    #[test]
    fn csv_keeps_its_shape_quoting_and_multi_line_cells() {
        let cols = Columns::parse("note=text,mrn=id,visit=date").expect("parses");
        let mut t = Table::read(CSV, Format::Csv, &cols, Some("patient")).expect("reads");
        let texts = t.texts();
        assert_eq!(texts[0], "Seen by Dr. Reyes,\nthen \"home\"");
        let found = spans(&texts, &["Reyes"]);
        t.deidentify(&found, &HashKey::from_bytes([5; 32]), &opts(), None);
        let out = t.write().expect("writes");
        let mut r = csv::Reader::from_reader(out.as_bytes());
        assert_eq!(
            r.headers().expect("header").iter().collect::<Vec<_>>(),
            ["patient", "mrn", "visit", "note", "ward"]
        );
        let rows: Vec<Vec<String>> = r
            .records()
            .map(|x| x.expect("row").iter().map(str::to_owned).collect())
            .collect();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0][3], "Seen by Dr. [person],\nthen \"home\"");
        assert_eq!(rows[0][4], "A");
        assert_eq!(rows[0][1], rows[2][1], "one MRN, one pseudonym");
        assert!(rows[0][1].starts_with("id_") && !rows[0][1].contains("4471"));
        // One patient, one offset: six days apart before and after.
        let d = |s: &str| chrono::NaiveDate::parse_from_str(s, "%m/%d/%Y").expect("date");
        assert_eq!((d(&rows[2][2]) - d(&rows[0][2])).num_days(), 5);
        assert_ne!(rows[0][2], "03/04/2021");
        assert_ne!(rows[1][2], "2021-05-06");
    }

    #[test]
    fn a_missing_column_is_named_and_a_bad_row_has_its_line() {
        let cols = Columns::parse("nope=text").expect("parses");
        assert_eq!(
            Table::read(CSV, Format::Csv, &cols, None).err(),
            Some(TableError::NoColumn("nope".into()))
        );
        let cols = Columns::parse("note=text").expect("parses");
        assert_eq!(
            Table::read("{\"note\": 1}\n[2]\n", Format::Jsonl, &cols, None).err(),
            Some(TableError::NotObject(2))
        );
    }

    /// A named JSON Lines column never passes a number, a boolean, an array or an object
    /// through unchanged. Before, every non-string value was copied out as it was, even
    /// under `redact` (`table_cells_changed 0`).
    #[test]
    fn jsonl_values_that_are_not_strings_do_not_pass_a_named_column() {
        let text = concat!(
            r#"{"mrn":4455667,"phone":6175550142,"flag":true,"visit":20210304,"#,
            r#""contact":{"name":"Zebulon"},"tags":["Zebulon"],"gone":null,"note":6175550142}"#,
            "\n"
        );
        let cols = Columns::parse(
            "mrn=id,phone=redact,flag=redact,visit=date,contact=redact,tags=redact,gone=redact,\
             note=text",
        )
        .expect("parses");
        let mut t = Table::read(text, Format::Jsonl, &cols, None).expect("reads");
        let texts = t.texts();
        assert_eq!(texts, ["6175550142"], "a number is read as its JSON text");
        let found = spans(&texts, &["6175550142"]);
        let changed = t.deidentify(&found, &HashKey::from_bytes([5; 32]), &opts(), None);
        let out: Value = serde_json::from_str(&t.write().expect("writes")).expect("json");
        assert!(
            out["mrn"].as_str().is_some_and(|v| v.starts_with("id_")),
            "{out}"
        );
        for redacted in ["phone", "flag", "contact", "tags"] {
            assert_eq!(out[redacted], "", "{redacted}: {out}");
        }
        assert_ne!(out["visit"], 20210304, "{out}");
        assert_eq!(out["note"], "[person]", "{out}");
        assert!(out["gone"].is_null(), "{out}");
        assert_eq!(changed, 7);
        for phi in ["4455667", "6175550142", "20210304", "Zebulon"] {
            assert!(!out.to_string().contains(phi), "{phi} left in {out}");
        }
    }

    /// A named column (or the subject column) that is a key of no line is a mistyped name:
    /// refused, since its values would pass through unread (found by an outside researcher:
    /// `notes=text` for `note`, `mrn=id` for `MRN`, exit 0, the PHI kept). A key missing
    /// from some lines only is fine; an empty file names no key at all.
    #[test]
    fn a_column_that_is_a_key_of_no_line_is_refused() {
        let text = "{\"note\":\"John Smith 617-555-0142\",\"MRN\":\"4455667\"}\n{\"pid\":\"P1\"}\n";
        for (spec, subject, missing) in [
            ("notes=text", None, "notes"),
            ("note=text,mrn=id", None, "mrn"),
            ("note=text", Some("patient_id"), "patient_id"),
        ] {
            let cols = Columns::parse(spec).expect("parses");
            let err = Table::read(text, Format::Jsonl, &cols, subject).expect_err("refused");
            assert_eq!(err, TableError::NoKey(missing.to_owned()), "{spec}");
            assert!(!err.to_string().contains("4455667"));
        }
        let cols = Columns::parse("note=text,MRN=id").expect("parses");
        assert!(Table::read(text, Format::Jsonl, &cols, Some("pid")).is_ok());
        assert!(Table::read("", Format::Jsonl, &cols, None).is_ok());
    }

    /// Values and lines the columns do not touch come back as written: a number keeps its
    /// spelling (`4.10`, `1E5`, an id past 2^64), escapes and spacing stay, CRLF endings and
    /// blank lines are kept; an id past 2^64 is pseudonymised from its exact digits. Before,
    /// every line was re-serialised: `4.10` became `4.1`, two ids past 2^64 that differ in
    /// the last digit got one pseudonym (patients merged), CRLF became LF and blank lines
    /// went (found by an outside researcher).
    #[test]
    fn jsonl_keeps_what_it_does_not_change_as_written() {
        let text = "{\"mrn\": 18446744073709551616, \"lab\": 4.10, \"e\": \"caf\\u00e9\"}\r\n\r\n\
                    {\"mrn\": 18446744073709551617, \"lab\": 1E5}\r\n\
                    {\"lab\": -0}\r\n";
        let cols = Columns::parse("mrn=id").expect("parses");
        let mut t = Table::read(text, Format::Jsonl, &cols, None).expect("reads");
        assert_eq!(t.rows(), 3);
        t.deidentify(&[], &HashKey::from_bytes([5; 32]), &opts(), None);
        let out = t.write().expect("writes");
        let lines: Vec<&str> = out.split("\r\n").collect();
        assert_eq!(lines.len(), 5, "{out:?}");
        assert_eq!(lines[1], "", "the blank line stays");
        assert_eq!(
            lines[3], "{\"lab\": -0}",
            "an untouched line stays byte for byte"
        );
        assert!(
            lines[0].contains("\"lab\":4.10") && lines[0].contains("caf\\u00e9"),
            "{out}"
        );
        assert!(lines[2].contains("\"lab\":1E5"), "{out}");
        let id = |l: &str| -> String {
            let v: Value = serde_json::from_str(l).expect("json");
            v["mrn"].as_str().expect("pseudonym").to_owned()
        };
        assert_ne!(id(lines[0]), id(lines[2]), "two ids, two pseudonyms");
    }

    #[test]
    fn an_array_or_object_under_text_id_date_or_the_subject_fails_naming_line_and_column() {
        let text =
            "{\"note\": \"ok\", \"who\": \"p1\"}\n\n{\"note\": [\"Zebulon\"], \"who\": \"p1\"}\n";
        for (spec, subject) in [
            ("note=text", None),
            ("note=id", None),
            ("note=date", None),
            ("who=redact", Some("note")),
        ] {
            let cols = Columns::parse(spec).expect("parses");
            let e = Table::read(text, Format::Jsonl, &cols, subject).unwrap_err();
            assert_eq!(
                e,
                TableError::Nested {
                    line: 3,
                    column: "note".into()
                },
                "{spec}"
            );
            assert!(!e.to_string().contains("Zebulon"), "{e}");
        }
        let cols = Columns::parse("note=redact").expect("parses");
        assert!(Table::read(text, Format::Jsonl, &cols, None).is_ok());
    }

    #[test]
    fn jsonl_keeps_other_keys_and_their_order() {
        let text = "{\"id\": 7, \"note\": \"Dr. Reyes saw her\", \"mrn\": \"A-1\", \"score\": 3}\n";
        let cols = Columns::parse("note=text,mrn=redact").expect("parses");
        let mut t = Table::read(text, Format::Jsonl, &cols, None).expect("reads");
        let found = spans(&t.texts(), &["Reyes"]);
        t.deidentify(&found, &HashKey::from_bytes([5; 32]), &opts(), None);
        assert_eq!(
            t.write().expect("writes"),
            "{\"id\":7,\"note\":\"Dr. [person] saw her\",\"mrn\":\"\",\"score\":3}\n"
        );
    }
}
