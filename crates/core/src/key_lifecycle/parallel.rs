//! Page work spread over the CPU's cores: the codec is `Send + Sync`, and the pages of a
//! chunk are independent, so a chunk is split in whole pages among scoped threads. No
//! SQLite runs on these threads.

/// Most threads used (past a few, the disk is the limit).
const MAX_THREADS: usize = 8;

/// The work on one page: `(page number, image)`.
pub(crate) type PageFn<'a, E> = dyn Fn(u64, &mut [u8]) -> Result<(), E> + Sync + 'a;

fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_THREADS))
}

/// Calls `f(pgno, image)` for every page of `bytes` (whole pages of `page_size` bytes,
/// the first being page `first`), on several threads. On failure returns the error of the
/// lowest page number that failed (every page is still visited by its thread up to its
/// first failure).
pub(crate) fn each_page<E: Send>(
    first: u64,
    bytes: &mut [u8],
    page_size: usize,
    f: &PageFn<'_, E>,
) -> Result<(), (u64, E)> {
    let pages = bytes.len() / page_size;
    let workers = threads().min(pages.max(1));
    let run = |start: u64, slice: &mut [u8]| -> Result<(), (u64, E)> {
        for (i, image) in slice.chunks_exact_mut(page_size).enumerate() {
            let pgno = start + i as u64;
            f(pgno, image).map_err(|e| (pgno, e))?;
        }
        Ok(())
    };
    if workers <= 1 {
        return run(first, bytes);
    }
    let per_worker = pages.div_ceil(workers) * page_size;
    let results: Vec<Result<(), (u64, E)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = bytes
            .chunks_mut(per_worker)
            .enumerate()
            .map(|(w, slice)| {
                let start = first + (w * per_worker / page_size) as u64;
                scope.spawn(move || run(start, slice))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| match h.join() {
                Ok(r) => r,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    });
    // Slices are in page order: the first error found is the lowest page number.
    results
        .into_iter()
        .collect::<Result<Vec<()>, _>>()
        .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visits_every_page_once_and_reports_the_lowest_failure() {
        let page = 16;
        let mut bytes: Vec<u8> = (0..100u8).flat_map(|p| vec![p; page]).collect();
        each_page(1, &mut bytes, page, &|pgno,
                                         image: &mut [u8]|
         -> Result<(), ()> {
            assert!(
                image.iter().all(|&b| u64::from(b) + 1 == pgno),
                "page {pgno}"
            );
            image.fill(0xff);
            Ok(())
        })
        .unwrap();
        assert!(bytes.iter().all(|&b| b == 0xff));
        let err = each_page(1, &mut bytes, page, &|pgno, _: &mut [u8]| {
            if pgno == 77 || pgno == 12 || pgno == 99 {
                Err(pgno * 10)
            } else {
                Ok(())
            }
        })
        .unwrap_err();
        assert_eq!(err, (12, 120));
        // One page: no threads needed.
        each_page(5, &mut bytes[..page], page, &|pgno,
                                                 _: &mut [u8]|
         -> Result<(), ()> {
            assert_eq!(pgno, 5);
            Ok(())
        })
        .unwrap();
    }
}
